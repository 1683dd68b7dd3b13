#!/usr/bin/env bash
# make bench-baremetal's table: runs bench_baremetal.elf (the kernels, bench_baremetal.cc) and
# headway_firmware.elf (the Session's and the whole decoder's runs, examples/baremetal) of two
# Cortex-M55 builds under qemu-system-arm -icount shift=0, and prints per case the instructions of
# the SCALAR build (HEADWAY_KERNELS_HELIUM=OFF), of the MVE build and their ratio, then the SysTick
# calibration and the kernel path each build reported. Instructions, not cycles. It prints and asserts nothing
# about the numbers; it fails only when an image fails or cannot count (no -icount).
#   bash bench/baremetal/compare.sh build/cortex-m55-scalar build/cortex-m55
# Each run's output stays next to its image: <build>/firmware/<image>.icount.txt.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 SCALAR_BUILD_DIR MVE_BUILD_DIR" >&2
  exit 2
fi
builds=("$1" "$2")
qemu=${QEMU_SYSTEM_ARM:-qemu-system-arm}

# run BUILD IMAGE: the image's output file (exits on failure, with the output).
run() {
  local elf=$1/firmware/$2.elf out=$1/firmware/$2.icount.txt
  if [ ! -f "$elf" ]; then
    echo "compare.sh: $elf is not built" >&2
    exit 1
  fi
  if ! timeout 300 "$qemu" -M mps3-an547 -nographic -icount shift=0 -semihosting-config enable=on,target=native \
      -kernel "$elf" </dev/null >"$out" 2>&1; then
    cat "$out" >&2
    echo "compare.sh: $elf failed under qemu-system-arm -icount shift=0" >&2
    exit 1
  fi
  echo "$out"
}

declare -A count  # [column,case] = instructions
declare -a cases  # in the order the first build printed them
declare -a paths calibrations
for col in 0 1; do
  bench=$(run "${builds[$col]}" bench_baremetal)
  firmware=$(run "${builds[$col]}" headway_firmware)
  while IFS= read -r line; do
    if [[ $line =~ ^case\ (.*):\ ([0-9]+)\ instructions\ per\ call ]]; then
      name=${BASH_REMATCH[1]}
      [ "$col" = 0 ] && cases+=("$name")
      count[$col,$name]=${BASH_REMATCH[2]}
    elif [[ $line =~ attention\ kernels\ ([A-Za-z0-9_]+),\ matmul\ ([A-Za-z0-9_]+) ]]; then
      paths[col]="attention ${BASH_REMATCH[1]}, matmul ${BASH_REMATCH[2]}"
    elif [[ $line =~ ^instruction\ counter:\ (.*)$ ]]; then
      calibrations[col]=${BASH_REMATCH[1]}
    fi
  done <"$bench"
  line=$(grep -E '^instructions: prefill' "$firmware" || true)
  if [[ ! $line =~ prefill\ ([0-9]+)\ tokens\ ([0-9]+),\ decode\ ([0-9]+)\ steps\ ([0-9]+) ]]; then
    echo "compare.sh: no instruction line in $firmware" >&2
    exit 1
  fi
  prefill="firmware: Session prefill, ${BASH_REMATCH[1]} tokens"
  decode="firmware: Session decode, ${BASH_REMATCH[3]} steps"
  [ "$col" = 0 ] && cases+=("$prefill" "$decode")
  count[$col,$prefill]=${BASH_REMATCH[2]}
  count[$col,$decode]=${BASH_REMATCH[4]}
  line=$(grep -E '^model instructions: prefill' "$firmware" || true)
  if [[ ! $line =~ prefill\ ([0-9]+)\ tokens\ ([0-9]+),\ decode\ ([0-9]+)\ steps\ ([0-9]+) ]]; then
    echo "compare.sh: no whole-model instruction line in $firmware" >&2
    exit 1
  fi
  prefill="firmware: Model prefill, ${BASH_REMATCH[1]} tokens"
  decode="firmware: Model decode, ${BASH_REMATCH[3]} steps"
  [ "$col" = 0 ] && cases+=("$prefill" "$decode")
  count[$col,$prefill]=${BASH_REMATCH[2]}
  count[$col,$decode]=${BASH_REMATCH[4]}
done

echo "headway bench-baremetal: Cortex-M55 under qemu-system-arm -M mps3-an547 -icount shift=0"
echo "instructions per call (kernels: median of 5 calls; firmware: the whole phase, 2 layers each); instructions, not cycles"
printf '%-40s %12s %12s %11s\n' case SCALAR MVE SCALAR/MVE
for name in "${cases[@]}"; do
  s=${count[0,$name]:-}
  m=${count[1,$name]:-}
  ratio=$(awk -v s="$s" -v m="$m" 'BEGIN { if (s > 0 && m > 0) printf "%.2f", s / m; else printf "-" }')
  printf '%-40s %12s %12s %11s\n' "$name" "${s:--}" "${m:--}" "$ratio"
done
if [ "${calibrations[0]}" = "${calibrations[1]}" ]; then
  echo "calibration (both builds): ${calibrations[0]}"
else
  echo "calibration, SCALAR build: ${calibrations[0]}"
  echo "calibration, MVE build: ${calibrations[1]}"
fi
# Sizes: the kernels' archive (text, read-only data included) and the firmware's sections. The
# Helium kernels may change the code's size; the firmware's RAM (.data, .bss with the arena, the
# stack the linker script reserves) is the plan's and must not change.
size_bin=${ARM_SIZE:-arm-none-eabi-size}
section() {  # section ELF NAME: its size in bytes (0 when absent)
  "$size_bin" -A "$1" | awk -v n="$2" '$1 == n { s = $2 } END { print s + 0 }'
}
printf '%-40s %12s %12s\n' "size (bytes)" SCALAR MVE
declare -A bytes
for col in 0 1; do
  bytes[$col,kernels]=$("$size_bin" -t "${builds[$col]}/lib/libheadway_kernels.a" | awk 'END { print $1 }')
  elf=${builds[$col]}/firmware/headway_firmware.elf
  for sec in .text .rodata .data .bss .stack; do bytes[$col,$sec]=$(section "$elf" $sec); done
done
printf '%-40s %12s %12s\n' "kernels (libheadway_kernels.a, text)" "${bytes[0,kernels]}" "${bytes[1,kernels]}"
for sec in .text .rodata .data .bss .stack; do
  printf '%-40s %12s %12s\n' "firmware $sec" "${bytes[0,$sec]}" "${bytes[1,$sec]}"
done
ram0=$((bytes[0,.data] + bytes[0,.bss] + bytes[0,.stack]))
ram1=$((bytes[1,.data] + bytes[1,.bss] + bytes[1,.stack]))
if [ "$ram0" = "$ram1" ]; then
  echo "firmware RAM (.data + .bss + .stack): $ram1 bytes in both builds"
else
  echo "firmware RAM (.data + .bss + .stack): SCALAR $ram0, MVE $ram1 bytes: they differ"
fi
echo "kernel paths: SCALAR column (${builds[0]}) ran ${paths[0]}; MVE column (${builds[1]}) ran ${paths[1]}"
if [[ ${paths[1]} != *"attention MVE"* ]]; then
  echo "note: the MVE build ran no MVE attention kernels (no Helium path in this tree, or HEADWAY_KERNELS_HELIUM is off), so both columns measure the same code"
fi
