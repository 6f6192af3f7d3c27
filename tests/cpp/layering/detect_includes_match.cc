// Compiled as if it were a file of the detect stage: the stage below it is
// visible (the positive twin of detect_includes_diagnose.cc).
#include "match/match.h"

int DetectSeesMatch() { return sizeof(magneton::MatchResult) > 0; }
