#!/bin/sh
# Synthetic speech clips for the turn-taking speech sets (fixtures/tuning-speech,
# bench/held-apart-speech) with espeak-ng and sox. Each set's make.sh holds its own phrases,
# voices, speeds and levels, so the sets stay apart; the synthesis is this one script.
#
# Every phrase: espeak-ng at 22.05 kHz -> its silence trimmed -> telephone band (300-3400 Hz)
# -> 8 kHz -> RMS level -> 100 ms of silence before it. A clip is stored as raw 8 kHz mu-law.
#
#   speech-clips.sh rotate OUT_DIR PREFIX "VOICES" "WORDS_PER_MIN..." "RMS_DBFS..." PHRASE...
#     One clip per phrase and level, named PREFIXnn_<voice>_<words per minute>_<level>db.ulaw,
#     the voices and speeds taken in turn from clip to clip.
#   speech-clips.sh pauses OUT_DIR CLIP VOICE WORDS_PER_MIN RMS_DBFS PAUSE_S PHRASE...
#     One clip, CLIP.ulaw: the phrases in order, each at that level, PAUSE_S of silence between them.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# render NAME VOICE WORDS_PER_MIN RMS_DBFS TEXT...: one phrase at that RMS level (over the phrase),
# 100 ms of silence before it, as $tmp/NAME.wav.
render() {
  name=$1 voice=$2 wpm=$3 level=$4
  shift 4
  espeak-ng -v "$voice" -s "$wpm" -w "$tmp/raw.wav" "$*"
  sox "$tmp/raw.wav" -r 8000 -c 1 -b 16 "$tmp/band.wav" silence 1 0.02 0.1% reverse silence 1 0.02 0.1% reverse sinc 300-3400
  rms=$(sox "$tmp/band.wav" -n stat 2>&1 | awk '/RMS +amplitude/ { print $3 }')
  gain=$(awk -v rms="$rms" -v level="$level" 'BEGIN { printf "%.2f", level - 20 * log(rms) / log(10) }')
  sox "$tmp/band.wav" "$tmp/$name.wav" gain "$gain" pad 0.1 0
}

# encode NAME: the finished 8 kHz clip $tmp/NAME.wav as raw mu-law, OUT_DIR/NAME.ulaw.
encode() {
  sox "$tmp/$1.wav" -t raw -r 8000 -c 1 -e mu-law "$out/$1.ulaw"
}

# nth N WORDS: the Nth of the words (from 0), wrapping round.
nth() {
  count=$(echo $2 | wc -w)
  echo $2 | cut -d' ' -f$(( ($1 % count) + 1 ))
}

usage() {
  echo "usage: speech-clips.sh rotate OUT_DIR PREFIX VOICES SPEEDS LEVELS PHRASE..." >&2
  echo "       speech-clips.sh pauses OUT_DIR CLIP VOICE WORDS_PER_MIN RMS_DBFS PAUSE_S PHRASE..." >&2
  exit 2
}

[ $# -ge 2 ] || usage
mode=$1 out=$2
shift 2
case $mode in
  rotate)
    [ $# -ge 5 ] || usage
    prefix=$1 voices=$2 speeds=$3 levels=$4
    shift 4
    i=0
    for phrase in "$@"; do
      for level in $levels; do
        v=$(nth "$i" "$voices")
        s=$(nth "$i" "$speeds")
        name=$(printf '%s%02d_%s_%s_%sdb' "$prefix" "$i" "$(echo "$v" | tr '+' '-')" "$s" "${level#-}")
        render "$name" "$v" "$s" "$level" "$phrase"
        encode "$name"
        i=$((i + 1))
      done
    done
    ;;
  pauses)
    [ $# -ge 6 ] || usage
    clip=$1 pvoice=$2 pwpm=$3 plevel=$4 pause=$5
    shift 5
    parts=""
    n=0
    for phrase in "$@"; do
      render "$clip-$n" "$pvoice" "$pwpm" "$plevel" "$phrase"
      if [ -n "$parts" ]; then
        sox -n -r 8000 -c 1 -b 16 "$tmp/$clip-gap$n.wav" trim 0 "$pause"
        parts="$parts $tmp/$clip-gap$n.wav"
      fi
      parts="$parts $tmp/$clip-$n.wav"
      n=$((n + 1))
    done
    # shellcheck disable=SC2086
    sox $parts "$tmp/$clip.wav"
    encode "$clip"
    ;;
  *) usage ;;
esac
