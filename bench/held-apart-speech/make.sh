#!/bin/sh
# Regenerates the held-apart speech set (see README.md) with ../../scripts/speech-clips.sh
# (espeak-ng and sox). Its phrases, voices, speeds and levels are its own: the tuning set
# (fixtures/tuning-speech) shares none of them.
set -eu
cd "$(dirname "$0")"
clips=../../scripts/speech-clips.sh

# Interruptions: one phrase each, voices x speeds x levels in a fixed rotation.
sh "$clips" rotate . int \
  "en-us en-gb+f3 en-gb-scotland en-029+m3 en-us+f4" \
  "140 175 220" \
  "-20 -25 -30 -35" \
  "wait, actually I need a table for four" \
  "no no, hold on a second" \
  "sorry, can I ask something else" \
  "excuse me, what time do you close" \
  "hang on, that is not what I asked" \
  "okay but is there parking nearby" \
  "stop, I want to change my booking" \
  "hey, could you repeat the address"

# Utterances with inner pauses (a list of short phrases), and one without, at a middle level.
sh "$clips" pauses . pauses_list_short en-us 170 -24 0.5 "eggs" "milk" "some bread" "and two lemons"
sh "$clips" pauses . pauses_list_long en-gb+f3 160 -24 0.6 "I would like the soup" "then the fish" "no starter for my wife" "and a bottle of water" "still, not sparkling"
sh "$clips" pauses . pauses_question en-029+m3 175 -24 0.45 "so the thing is" "we are six people" "is that a problem"
sh "$clips" pauses . no_pauses_question en-us+f4 175 -24 0 "could we have a table by the window at eight tonight please"
