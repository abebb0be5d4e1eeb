# shellcheck shell=bash
# tests/pi/common.sh: settings shared by the emulator scripts here (copied from
# ../shared/pi-emu/common.sh; the image itself is built by ../shared/pi-emu/build-image.sh).
# Source it; do not run it. Big artifacts live outside the repo, under $PI_EMU_DIR.
PI_EMU_DIR=${PI_EMU_DIR:-/var/tmp/pi-emu}
IMG=${IMG:-$PI_EMU_DIR/rootfs.img}          # raw ext4 root filesystem (the "SD card")
KERNEL=${KERNEL:-$PI_EMU_DIR/vmlinuz}
INITRD=${INITRD:-$PI_EMU_DIR/initrd.img}
VM_MEM=${VM_MEM:-1024}                      # MiB; a Pi 3 has 1 GiB
VM_SMP=${VM_SMP:-2}
export PI_EMU_DIR IMG KERNEL INITRD VM_MEM VM_SMP

# qemu-system-arm command line. "virt" board + Cortex-A15 = ARMv7-A with VFPv4/NEON, like a
# Pi 2/3/4 in 32-bit mode. Extra args (drives, shares, serial) are appended by the callers.
qemu_base_args() {
    local append=$1
    printf '%s\n' -M virt -cpu cortex-a15 -smp "$VM_SMP" -m "$VM_MEM" \
        -kernel "$KERNEL" -initrd "$INITRD" -append "$append" \
        -netdev user,id=n0 -device virtio-net-device,netdev=n0 \
        -device virtio-rng-device \
        -no-reboot -display none -monitor none
}
export KERNEL_CMDLINE_BASE="root=/dev/vda rw rootwait console=ttyAMA0 panic=5"
