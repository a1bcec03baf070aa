#!/bin/sh
# bench/scale.sh (make bench-scale): BenchmarkThroughput (host package) at
# 1, 2, 4, ... cores up to the machine's, native and sandboxed, with the
# provider in a process of its own. Where the machine has twice the cores
# measured, the benchmark runs on cores 0..n-1 (taskset) and the provider
# on the rest, so it never takes the cores measured. Prints a Markdown
# table (also written to $OUT, default bench-scale.md) with the machine
# described. Environment: GO (go), BENCHTIME (1s), COUNT (3), MAXCPUS
# (all), OUT (bench-scale.md).
set -eu
GO=${GO:-go}
BENCHTIME=${BENCHTIME:-1s}
COUNT=${COUNT:-3}
N=$(nproc)
MAXCPUS=${MAXCPUS:-$N}
OUT=${OUT:-bench-scale.md}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$GO test -c -o "$tmp/host.test" ./host/
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
[ -n "$model" ] || model=$(uname -m)
have_taskset=no
command -v taskset >/dev/null 2>&1 && have_taskset=yes

# median of the numbers on stdin
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) printf "%.0f", v[(NR+1)/2]; else printf "%.0f", (v[NR/2]+v[NR/2+1])/2}'; }

counts=""
c=1
while [ "$c" -le "$MAXCPUS" ]; do counts="$counts $c"; c=$((c * 2)); done
last=${counts##* }
[ "$last" -eq "$MAXCPUS" ] || counts="$counts $MAXCPUS"

{
echo "Machine: $model, $N logical cores, $(uname -sr), $($GO env GOVERSION); BenchmarkThroughput (viewer op, 8 goroutines per core, provider out of process), median of $COUNT runs of $BENCHTIME; written $(date -u '+%Y-%m-%d %H:%M UTC')."
echo
echo "| cores | placement | native ops/s | sandboxed ops/s | sandboxed / native | sandboxed vs linear from 1 core |"
echo "| --- | --- | --- | --- | --- | --- |"
} > "$tmp/table"
base=""
for c in $counts; do
	run="$tmp/host.test"
	placement="shared with the provider"
	env_cpus=""
	if [ "$have_taskset" = yes ] && [ $((2 * c)) -le "$N" ]; then
		run="taskset -c 0-$((c - 1)) $tmp/host.test"
		env_cpus="$c-$((N - 1))"
		placement="cores 0-$((c - 1)); provider on $env_cpus"
	fi
	(cd host && PINNED_BENCH_PROVIDER_CPUS="$env_cpus" $run -test.run='^$' -test.bench='^BenchmarkThroughput$' \
		-test.cpu="$c" -test.benchtime="$BENCHTIME" -test.count="$COUNT") > "$tmp/out.$c"
	nat=$(awk '/^BenchmarkThroughput\/native/ {for (i=1;i<=NF;i++) if ($(i)=="ops/s") print $(i-1)}' "$tmp/out.$c" | median)
	sbx=$(awk '/^BenchmarkThroughput\/reset/ {for (i=1;i<=NF;i++) if ($(i)=="ops/s") print $(i-1)}' "$tmp/out.$c" | median)
	[ -n "$base" ] || base=$sbx
	ratio=$(awk -v a="$sbx" -v b="$nat" 'BEGIN {printf "%.2f", a/b}')
	lin=$(awk -v a="$sbx" -v b="$base" -v c="$c" 'BEGIN {printf "%.2f", a/(b*c)}')
	echo "| $c | $placement | $nat | $sbx | $ratio | $lin |" >> "$tmp/table"
	echo "cores $c: native $nat ops/s, sandboxed $sbx ops/s" >&2
done
cat "$tmp/table" | tee "$OUT"
