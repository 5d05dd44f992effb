#!/bin/sh
# hypertune as its own decoder: tune weights by rescoring fixed search spaces in the tuning loop.
#
#   examples/rescoring-loop.sh [WORKDIR]                      synthetic forests (a minute)
#   examples/rescoring-loop.sh WORKDIR HGDIR REF INIT...      your own graphs (e.g. a Moses hypergraph
#                                                             directory), references and start weights
#
# Every iteration decodes the graphs with the current weights (`hypertune decode --kbest {k} --unique
# --out {kbest}` writes a Moses n-best list), adds the lists to those of earlier iterations, and tunes
# with MERT; the work directory keeps every step, so the same command with --resume continues a killed
# run. See docs/tuning-loop.md. Set HYPERTUNE to the command to use (default: hypertune).
set -eu
HT=${HYPERTUNE:-hypertune}
WORK=${1:-tuning-example}
mkdir -p "$WORK"
if [ $# -ge 4 ]; then
    GRAPHS=$2 REF=$3
    shift 3
    INIT=""
    for w in "$@"; do INIT="$INIT --init $w"; done
else
    # 30 synthetic forests; the references are their best translations under hidden weights, so tuning
    # from other weights has something to find
    GRAPHS=$WORK/forests.json REF=$WORK/ref
    $HT generate "$GRAPHS" --graphs 30 --edges 400 --features 6 --seed 5 --quiet
    printf 'F0 0.3\nF1 -1\nF2 0.5\nF3 0.2\nF4 -0.4\nF5 1\n' > "$WORK/hidden.weights"
    $HT decode "$GRAPHS" --weights "$WORK/hidden.weights" --out "$REF" --out-format text
    printf 'F0 1\nF1 0\nF2 0\nF3 0\nF4 0\nF5 0\n' > "$WORK/init.weights"
    INIT="--init $WORK/init.weights"
fi
# shellcheck disable=SC2086 # INIT is a list of options
$HT tune --decoder "$HT decode $GRAPHS --weights {weights} --kbest {k} --unique --out {kbest} --quiet" \
    --refs "$REF" $INIT --kbest 100 --iterations 5 --tuner mert --restarts 5 --seed 1 \
    --workdir "$WORK/run" --resume --out "$WORK/tuned.weights"
echo "history: $WORK/run/state.json; weights: $WORK/tuned.weights"
