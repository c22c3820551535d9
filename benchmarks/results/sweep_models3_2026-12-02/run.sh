#!/bin/bash
# usage: run.sh NAME COMMAND args... (-o goes right after COMMAND, before a script and its own arguments)
# SRC=DIR runs against another copy of src (sweep 3 ran most cases on a snapshot of the committed src, so that
# edits in the worktree did not reach a running case)
name=$1; shift
out=/tmp/sweep3/out/$name; rm -rf $out; mkdir -p /tmp/sweep3/logs
cd /work/wt/sweep3
ROOFLINE_CACHE_DIR=/tmp/sweep3-cache PYTHONPATH=${SRC:-src} timeout 400 nice -n 19 /work/main/.venv/bin/python -m roofline $1 -o $out "${@:2}" > /tmp/sweep3/logs/$name.out 2> /tmp/sweep3/logs/$name.err
rc=$?
files=$(ls $out 2>/dev/null | tr '\n' ' ')
bad=$(grep -Eiw 'nan|inf|-[0-9.]+ ?(ms|us|s)' /tmp/sweep3/logs/$name.out | head -2 | tr '\n' '|')
tb=$(grep -c Traceback /tmp/sweep3/logs/$name.err)
unm=$(grep -i unmodel /tmp/sweep3/logs/$name.out | head -1 | cut -c1-100)
echo "$name rc=$rc tb=$tb files=[$files] bad=[$bad] unm=[$unm] err=[$(grep -v '^\[' /tmp/sweep3/logs/$name.err | tail -1 | cut -c1-250)]"
