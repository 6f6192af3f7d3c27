# Replay stage tests: the loop, target and online comparison with a scripted
# clock, device and counter (no torch, no GPU).
magneton_test(replay_unittest)
