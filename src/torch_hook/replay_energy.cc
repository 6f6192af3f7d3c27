#include "torch_hook/replay_energy.h"

namespace magneton::replay {

// Replaced when the energy stage lands: for now replay measures time only.
EnergyReader OpenReplayEnergyReader() { return {}; }

}  // namespace magneton::replay
