# Sourced by the session benchmarks that compare this build with a baseline binary on sgemm
# (bench-sessions-vs.sh, bench-durability.sh): checks the usage, builds, prints the machine and
# sets $line, the line of sgemm.c's inner loop where their breakpoint goes.
[ $# -ge 1 ] || { echo "usage: $0 BASELINE_VXREPLAY [RUNS]" >&2; exit 64; }
ninja -C build vxreplay examples/sgemm.elf >/dev/null
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  nproc: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
line=$(grep -n 'for (uint32_t k = 0; k < T; k++) acc +=' examples/sgemm.c | cut -d: -f1)
