#!/bin/bash
# usage: run.sh NAME COMMAND args... (-o goes right after COMMAND, before a script and its own arguments)
name=$1; shift
out=/tmp/models2/out/$name; rm -rf $out; mkdir -p /tmp/models2/logs
cd /work/wt/models2
ROOFLINE_CACHE_DIR=/tmp/models2-cache PYTHONPATH=src timeout 400 nice -n 19 /work/main/.venv/bin/python -m roofline $1 -o $out "${@:2}" > /tmp/models2/logs/$name.out 2> /tmp/models2/logs/$name.err
rc=$?
files=$(ls $out 2>/dev/null | tr '\n' ' ')
bad=$(grep -Eiw 'nan|inf|-[0-9.]+ ?(ms|us|s)' /tmp/models2/logs/$name.out | head -2 | tr '\n' '|')
tb=$(grep -c Traceback /tmp/models2/logs/$name.err)
unm=$(grep -i unmodel /tmp/models2/logs/$name.out | head -1 | cut -c1-100)
echo "$name rc=$rc tb=$tb files=[$files] bad=[$bad] unm=[$unm] err=[$(grep -v '^\[' /tmp/models2/logs/$name.err | tail -1 | cut -c1-250)]"
