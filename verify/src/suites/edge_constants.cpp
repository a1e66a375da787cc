// Edge constants: the variants of a constants file that move the arithmetic's corner cases
// (eps 0 and tiny, both gain centres, every weight dtype, fused squares).
#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/edge_suite.hpp>

#include <limits>

namespace boundary::suite {

std::vector<std::pair<std::string, Constants>> edge_constants(const Constants& base) {
  std::vector<std::pair<std::string, Constants>> variants;
  const nlohmann::json base_json = constants_to_json(base);
  const auto add = [&](const std::string& name, auto change) {
    Constants c = base;
    change(c.post);
    change(c.pre);
    const nlohmann::json json = constants_to_json(c);
    if (json == base_json) return;
    variants.emplace_back(name, constants_from_json(json, "edge constants '" + name + "'"));
  };
  add("eps 0", [](NormConstants& n) { n.eps = 0.0; });
  add("eps tiny (the smallest normal float)", [](NormConstants& n) { n.eps = std::numeric_limits<float>::min(); });
  for (const double g : {0.0, 1.0})
    add(g == 0.0 ? "gain centre 0" : "gain centre 1", [g](NormConstants& n) {
      if (n.has_weight()) n.gain_center = g;
    });
  for (const WeightDtype d : {WeightDtype::bf16, WeightDtype::fp16, WeightDtype::fp32})
    add("weight dtype " + std::string(weight_dtype_name(d)), [d](NormConstants& n) {
      if (n.has_weight()) n.weight_dtype = d;
    });
  add("fma_squares on", [](NormConstants& n) { n.fma_squares = true; });
  return variants;
}

}  // namespace boundary::suite
