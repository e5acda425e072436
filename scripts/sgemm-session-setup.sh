# Sourced by the session benchmarks that compare this build with a baseline binary on sgemm
# (bench-sessions-vs.sh, bench-durability.sh): checks the usage, builds, prints the machine, says
# which processor the timed sessions run on ($BENCH_PIN_CPU) and sets $line, the line of sgemm.c's
# inner loop where their breakpoint goes.
# PIN=N runs the sessions on processor N (default 0; PIN= lets the scheduler choose), as
# bench-qemu.sh does: on a shared VM one virtual processor can run at half speed for minutes.
[ $# -ge 1 ] || { echo "usage: $0 BASELINE_VXREPLAY [RUNS]" >&2; exit 64; }
ninja -C build vxreplay examples/sgemm.elf >/dev/null
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  nproc: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
pin_cpu="${PIN-0}"
echo "processes on processor: ${pin_cpu:-any (not pinned)}"
# The timed processes only (the scripts prefix them with taskset): the driver stays free to run on
# the other processor.
export BENCH_PIN_CPU="$pin_cpu"
line=$(grep -n 'for (uint32_t k = 0; k < T; k++) acc +=' examples/sgemm.c | cut -d: -f1)
