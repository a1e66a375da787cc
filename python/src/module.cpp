// boundary_verify._native: the emulator, the gate's cases and the bitwise comparison on numpy
// arrays, through the same C++ as the CLI (bind_inputs checks the tensors, report::compare_tensors
// compares them). BF16 and FP16 tensors travel as uint16 (or int16) bit views, F32 as float32 (or
// uint32/int32 bits); nothing is converted by value, so NaN payloads and -0.0 arrive as they are.
#include <boundary/verify/boundary_tensors.hpp>
#include <boundary/verify/cases.hpp>
#include <boundary/verify/cli.hpp>
#include <boundary/verify/constants_json.hpp>
#include <boundary/reference.hpp>
#include <boundary/verify/report.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>

namespace py = pybind11;
namespace st = boundary::safetensors;
using namespace boundary;

namespace {

// A dict (the constants JSON as Python data) or a path to a constants file.
Constants to_constants(const py::object& constants) {
  if (py::isinstance<py::dict>(constants)) {
    const std::string text = py::module_::import("json").attr("dumps")(constants).cast<std::string>();
    return parse_constants(text, "constants (dict)");
  }
  if (py::isinstance<py::str>(constants) || py::hasattr(constants, "__fspath__"))
    return read_constants(py::module_::import("os").attr("fspath")(constants).cast<std::string>());
  throw py::type_error("constants: a dict or a path to a constants JSON file");
}

// The bits of a numpy array as a tensor; a 16-bit array becomes `sixteen` (BF16 or F16).
st::Tensor to_tensor(const py::array& a, const std::string& name, st::Dtype sixteen) {
  const py::dtype dt = a.dtype();
  const char kind = dt.kind();
  const bool integer = kind == 'u' || kind == 'i';
  st::Dtype dtype;
  if (integer && dt.itemsize() == 2) dtype = sixteen;
  else if ((integer || kind == 'f') && dt.itemsize() == 4) dtype = st::Dtype::F32;
  else
    throw InputError(name + ": numpy dtype " + dt.attr("name").cast<std::string>() +
                     ", expected uint16 or int16 (BF16 or FP16 bits) or float32 (F32)");
  if (dt.attr("byteorder").cast<std::string>() == ">") throw InputError(name + ": big-endian array, expected native order");
  const py::array c = py::array::ensure(a, py::array::c_style);
  std::vector<std::int64_t> shape(a.shape(), a.shape() + a.ndim());
  st::Tensor t = st::make_tensor(dtype, shape);
  std::memcpy(t.bytes.data(), c.data(), t.bytes.size());
  return t;
}

py::array to_numpy(const st::Tensor& t) {
  const std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
  py::array a = t.dtype == st::Dtype::F32 ? py::array(py::dtype::of<float>(), shape) : py::array(py::dtype::of<std::uint16_t>(), shape);
  std::memcpy(a.mutable_data(), t.bytes.data(), t.bytes.size());
  return a;
}

py::dict emulate(const py::object& constants_arg, const std::optional<py::array>& branch,
                 const std::optional<py::array>& partials, const py::array& stream, const py::array& alpha,
                 const py::array& beta, const std::optional<py::array>& post_weight,
                 const std::optional<py::array>& pre_weight, bool store_stream, unsigned threads) {
  const Constants constants = to_constants(constants_arg);
  const auto sixteen = [](const NormConstants& n) {
    return n.has_weight() && n.weight_dtype == WeightDtype::fp16 ? st::Dtype::F16 : st::Dtype::BF16;
  };
  st::File file;
  const auto put = [&](const char* name, const std::optional<py::array>& a, st::Dtype dtype) {
    if (a) file.tensors[name] = to_tensor(*a, name, dtype);
  };
  put("branch", branch, st::Dtype::BF16);
  put("partials", partials, st::Dtype::BF16);
  put("stream", stream, st::Dtype::BF16);
  put("alpha", alpha, st::Dtype::BF16);
  put("beta", beta, st::Dtype::BF16);
  put("post_weight", post_weight, sixteen(constants.post));
  put("pre_weight", pre_weight, sixteen(constants.pre));
  const BoundTensors bound = bind_inputs(file, constants, "emulate()");
  const std::vector<py::ssize_t> shape = {bound.m, kH};
  py::array_t<std::uint16_t> out(shape);
  py::array_t<float> new_stream(store_stream ? shape : std::vector<py::ssize_t>{0});
  ref::Outputs o;
  o.out = out.mutable_data();
  if (store_stream) o.new_stream = new_stream.mutable_data();
  {
    py::gil_scoped_release unlocked;
    ref::Boundary(constants, bound.operands).run(bound.inputs, o, cli::host_threads(threads));
  }
  py::dict result;
  result["out"] = out;
  if (store_stream) result["new_stream"] = new_stream;
  return result;
}

py::list make_cases(const py::object& constants_arg, const std::string& suite, std::uint64_t seed, int level,
               std::int64_t rows, int ranks, bool store_stream) {
  const Constants base = to_constants(constants_arg);
  const py::object loads = py::module_::import("json").attr("loads");
  py::list all;
  cases::Options o{level, rows, seed, ranks, store_stream, suite};
  cases::for_each_case(base, o, [&](cases::Case&& c) {
    py::dict inputs;
    for (const auto& [name, tensor] : c.inputs.tensors) inputs[name.c_str()] = to_numpy(tensor);
    py::dict d;
    d["name"] = c.name;
    d["suite"] = c.info.name;
    d["constants"] = loads(constants_to_json(c.constants).dump());
    d["store_stream"] = c.store_stream;
    d["stream_dtype"] = c.info.stream_dtype;
    d["inputs"] = inputs;
    all.append(d);
  });
  return all;
}

// None when every bit is equal; else the first difference and the count, as one sentence.
std::optional<std::string> first_difference(const py::array& actual, const py::array& expected, const std::string& name) {
  const st::Tensor a = to_tensor(actual, name + " (actual)", st::Dtype::BF16);
  const st::Tensor e = to_tensor(expected, name + " (expected)", st::Dtype::BF16);
  if (a.dtype != e.dtype || a.shape != e.shape)
    return name + ": actual is " + std::string(st::dtype_name(a.dtype)) + " " + st::shape_string(a.shape) +
           ", expected " + std::string(st::dtype_name(e.dtype)) + " " + st::shape_string(e.shape);
  report::MismatchLog log(1);
  const report::TensorCount count = report::compare_tensors(e, a, "python", {"", "", "", "", name}, log);
  if (count.mismatches == 0) return std::nullopt;
  const report::Mismatch& m = log.kept().front();
  return name + ": " + std::to_string(count.mismatches) + " of " + std::to_string(count.compared) + " " + m.dtype +
         " elements differ; the first at row " + std::to_string(m.row) + ", column " + std::to_string(m.column) +
         ": actual " + report::hex_bits(m.actual_bits, m.dtype) + " (" + m.actual_class + "), expected " +
         report::hex_bits(m.expected_bits, m.dtype) + " (" + m.expected_class + "), " +
         (m.ulp_distance < 0 ? std::string("NaN involved") : std::to_string(m.ulp_distance) + " ulp apart");
}

}  // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() = "The boundary-verify emulator and the gate's cases on numpy arrays (bit views)";
  py::register_exception<InputError>(m, "InputError", PyExc_ValueError);
  m.def("emulate", &emulate, py::arg("constants"), py::kw_only(), py::arg("branch") = py::none(),
        py::arg("partials") = py::none(), py::arg("stream"), py::arg("alpha"), py::arg("beta"),
        py::arg("post_weight") = py::none(), py::arg("pre_weight") = py::none(), py::arg("store_stream") = true,
        py::arg("threads") = 0u);
  m.def("cases", &make_cases, py::arg("constants"), py::arg("suite"), py::arg("seed"), py::arg("level"), py::arg("rows"),
        py::arg("ranks"), py::arg("store_stream"));
  m.def("first_difference", &first_difference, py::arg("actual"), py::arg("expected"), py::arg("name"));
}
