#!/bin/sh
# Runs a test with lantern's kernels capped at one instruction-set tier:
#   sh cpu_tier.sh avx2|baseline PROGRAM [ARGS...]
# The avx2 tier exits 77 (skipped) on a CPU without AVX-512 or without AVX2,
# where it would only repeat the plain run or the baseline one; the baseline
# tier runs everywhere.
tier=$1
shift
if [ "$tier" = avx2 ]; then
    flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
    case " $flags " in
    *" avx512f "*) case " $flags " in *" avx2 "*) ;; *) exit 77 ;; esac ;;
    *) exit 77 ;;
    esac
fi
LANTERN_CPU=$tier exec "$@"
