#!/bin/bash
# usage: run.sh NAME COMMAND args... (-o goes right after COMMAND, before a script and its own arguments)
name=$1; shift
out=/tmp/sweep/out/$name; rm -rf $out; mkdir -p /tmp/sweep/logs
cd /work/wt/sweep
ROOFLINE_CACHE_DIR=/tmp/sweep-cache PYTHONPATH=src timeout 300 nice -n 19 /work/main/.venv/bin/python -m roofline $1 -o $out "${@:2}" > /tmp/sweep/logs/$name.out 2> /tmp/sweep/logs/$name.err
rc=$?
files=$(ls $out 2>/dev/null | tr '\n' ' ')
bad=$(grep -Eiw 'nan|inf|-[0-9.]+ ?(ms|us|s)' /tmp/sweep/logs/$name.out | head -2 | tr '\n' '|')
tb=$(grep -c Traceback /tmp/sweep/logs/$name.err)
unm=$(grep -i unmodel /tmp/sweep/logs/$name.out | head -1 | cut -c1-100)
echo "$name rc=$rc tb=$tb files=[$files] bad=[$bad] unm=[$unm] err=[$(grep -v '^\[' /tmp/sweep/logs/$name.err | tail -1 | cut -c1-250)]"
