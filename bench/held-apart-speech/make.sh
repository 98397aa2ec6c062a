#!/bin/sh
# Regenerates the held-apart speech set (see README.md) with espeak-ng and sox.
# Every clip: espeak-ng at 22.05 kHz -> its silence trimmed -> telephone band (300-3400 Hz) -> 8 kHz -> RMS level -> mu-law.
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# render NAME VOICE WORDS_PER_MIN RMS_DBFS TEXT...: one phrase at that RMS level (over the phrase),
# 100 ms of silence before it.
render() {
  name=$1 voice=$2 wpm=$3 level=$4
  shift 4
  espeak-ng -v "$voice" -s "$wpm" -w "$tmp/raw.wav" "$*"
  sox "$tmp/raw.wav" -r 8000 -c 1 -b 16 "$tmp/band.wav" silence 1 0.02 0.1% reverse silence 1 0.02 0.1% reverse sinc 300-3400
  rms=$(sox "$tmp/band.wav" -n stat 2>&1 | awk '/RMS +amplitude/ { print $3 }')
  gain=$(awk -v rms="$rms" -v level="$level" 'BEGIN { printf "%.2f", level - 20 * log(rms) / log(10) }')
  sox "$tmp/band.wav" "$tmp/$name.wav" gain "$gain" pad 0.1 0
}

# encode NAME: the finished 8 kHz clip as raw mu-law.
encode() {
  sox "$tmp/$1.wav" -t raw -r 8000 -c 1 -e mu-law "$1.ulaw"
}

# Interruptions: one phrase each, voices x speeds x levels in a fixed rotation.
set -- \
  "wait, actually I need a table for four" \
  "no no, hold on a second" \
  "sorry, can I ask something else" \
  "excuse me, what time do you close" \
  "hang on, that is not what I asked" \
  "okay but is there parking nearby" \
  "stop, I want to change my booking" \
  "hey, could you repeat the address"
voices="en-us en-gb+f3 en-gb-scotland en-029+m3 en-us+f4"
speeds="140 175 220"
levels="-20 -25 -30 -35"
i=0
for phrase in "$@"; do
  for level in $levels; do
    v=$(echo $voices | cut -d' ' -f$(( (i % 5) + 1 )))
    s=$(echo $speeds | cut -d' ' -f$(( (i % 3) + 1 )))
    name=$(printf 'int%02d_%s_%s_%sdb' "$i" "$(echo "$v" | tr '+' '-')" "$s" "${level#-}")
    render "$name" "$v" "$s" "$level" "$phrase"
    encode "$name"
    i=$((i + 1))
  done
done

# Utterances with inner pauses (a list of short phrases), and one without, at a middle level.
phrases() {
  clip=$1 pvoice=$2 pwpm=$3 pause=$4
  shift 4
  parts=""
  n=0
  for phrase in "$@"; do
    render "$clip-$n" "$pvoice" "$pwpm" -24 "$phrase"
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
}
phrases pauses_list_short en-us 170 0.5 "eggs" "milk" "some bread" "and two lemons"
phrases pauses_list_long en-gb+f3 160 0.6 "I would like the soup" "then the fish" "no starter for my wife" "and a bottle of water" "still, not sparkling"
phrases pauses_question en-029+m3 175 0.45 "so the thing is" "we are six people" "is that a problem"
phrases no_pauses_question en-us+f4 175 0 "could we have a table by the window at eight tonight please"
