#!/bin/sh
# skgate's op_compiler shim (C5, `skgate run --enforce-jobs`), installed as
# <attempt>/shim/bin/op_compiler and put first on the command's PATH, only when asked for.
#
# A launcher such as torchair passes `-j $(os.cpu_count())` and reads no
# NPU_STATIC_KERNEL_COMPILE_JOBS. This script execs the real op_compiler, found on the
# PATH the command had before the shim was added, with `-j` set to the frozen value, and
# leaves both argvs (NUL-separated) in the attempt's own directory for the stage record.
#
# POSIX sh on purpose: it starts no Python, so no interpreter start-up hook runs (C6).
# It signals, deletes and edits nothing; it writes only into $SKGATE_SHIM_CALLS.
set -f
name=${0##*/}
jobs=${SKGATE_SHIM_JOBS:-}
calls=${SKGATE_SHIM_CALLS:-}
case $jobs in
    '' | *[!0-9]* | 0*)
        echo "skgate op_compiler shim: SKGATE_SHIM_JOBS is not a whole number >= 1" >&2
        exit 127
        ;;
esac
real=
saved_ifs=$IFS
IFS=:
for dir in ${SKGATE_SHIM_PATH:-}; do
    [ -n "$dir" ] || dir=.
    [ "$dir" = "${SKGATE_SHIM_DIR:-}" ] && continue
    if [ -f "$dir/$name" ] && [ -x "$dir/$name" ]; then
        real=$dir/$name
        break
    fi
done
IFS=$saved_ifs
if [ -z "$real" ]; then
    echo "skgate op_compiler shim: no $name on the original PATH (SKGATE_SHIM_PATH)" >&2
    exit 127
fi
if [ -n "$calls" ]; then
    printf '%s\0' "$0" "$@" >"$calls/$$.orig" || exit 127
fi
first=1
want=0
seen=0
for arg do
    if [ "$first" = 1 ]; then
        set --
        first=0
    fi
    if [ "$want" = 1 ]; then
        set -- "$@" "$jobs"
        want=0
        continue
    fi
    case $arg in
        -j)
            set -- "$@" -j
            want=1
            seen=1
            ;;
        -j?*)
            set -- "$@" -j "$jobs"
            seen=1
            ;;
        *)
            set -- "$@" "$arg"
            ;;
    esac
done
if [ "$want" = 1 ]; then
    set -- "$@" "$jobs"
fi
if [ "$seen" = 0 ]; then
    set -- "$@" -j "$jobs"
fi
if [ -n "$calls" ]; then
    printf '%s\0' "$real" "$@" >"$calls/.$$.new" && mv -f "$calls/.$$.new" "$calls/$$.new" || exit 127
fi
exec "$real" "$@"
