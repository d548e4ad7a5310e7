#include "zkfleet/engine/curve.hpp"

namespace zkfleet::engine {

const char* CurveName(Curve curve) {
  switch (curve) {
    case Curve::kBn254: return "bn128";
    case Curve::kBls12_381: return "bls12381";
  }
  return "unknown";
}

}  // namespace zkfleet::engine
