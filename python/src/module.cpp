// baracuda._C — the op table from Python (nanobind).
//
// Everything here is derived from the op table (AnyPlan): the module lists the rows, selects a
// row's plan from a problem line, reports what the plan reports, and runs it on Python objects
// bound by operand name. Nothing is written per op. The Python package (python/baracuda) adds
// keyword arguments, the plan cache, workspace allocation and the framework integrations.
//
// Views: a torch.Tensor is read through its attributes (data_ptr / shape / stride / dtype: the
// fast path, registered by baracuda.torch); any other object through __cuda_array_interface__
// (CuPy, numba) or __dlpack__ (JAX, ...). Zero copy, any strides; host memory is refused.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/core/any_plan.hpp"
#include "baracuda/core/dlpack.hpp"
#include "core/validate.hpp"  // cat()

namespace nb = nanobind;
using namespace baracuda;

namespace {

// ---------------------------------------------------------------- errors

// A Status that is not OK, on its way to Python as baracuda.Error(code, message).
struct StatusError {
  std::string code, message;
};
// Module-lifetime objects set by the package at import: handles holding one reference each,
// released by _release() at exit (an nb::object would be destroyed after the interpreter
// has finalized).
nb::handle g_error_type;  // baracuda.Error

[[noreturn]] void raise(const Status& s) {
  throw StatusError{std::string(status_code_name(s.code())), s.message()};
}
[[noreturn]] void raise_invalid(const std::string& message) {
  throw StatusError{std::string(status_code_name(StatusCode::kInvalidProblem)), message};
}
void check(const Status& s) {
  if (!s.ok()) raise(s);
}

// ---------------------------------------------------------------- views of Python objects

// The torch fast path: torch.Tensor and {torch.dtype: baracuda dtype name}, set by baracuda.torch.
nb::handle g_torch_tensor;
nb::handle g_torch_dtypes;

void set_shape(TensorMut* v, nb::handle shape, std::string_view operand) {
  const size_t rank = nb::len(shape);
  if (rank > static_cast<size_t>(kMaxRank))
    raise_invalid(cat("operand '", operand, "': rank ", rank, " exceeds ", kMaxRank));
  v->rank = static_cast<int>(rank);
  for (size_t d = 0; d < rank; ++d) v->shape[d] = nb::cast<int64_t>(shape[d]);
}

// Attribute names, interned once (a lookup by a C string builds a Python string each time).
struct Names {
  nb::handle is_cuda, dtype, shape, stride, data_ptr, device;
};
const Names& names() {
  static const Names n{nb::str("is_cuda").release(), nb::str("dtype").release(), nb::str("shape").release(),
                       nb::str("stride").release(), nb::str("data_ptr").release(), nb::str("device").release()};
  return n;
}

nb::object getattr_fast(nb::handle o, nb::handle name) { return nb::steal(PyObject_GetAttr(o.ptr(), name.ptr())); }

TensorMut from_torch(nb::handle t, std::string_view operand) {
  const Names& n = names();
  nb::object cuda = getattr_fast(t, n.is_cuda);
  if (!cuda.is_valid()) throw nb::python_error();
  if (cuda.ptr() != Py_True)
    raise_invalid(cat("operand '", operand, "': a tensor on ", nb::cast<std::string>(nb::str(getattr_fast(t, n.device))),
                      "; baracuda runs on CUDA device memory"));
  TensorMut v;
  nb::object dt = getattr_fast(t, n.dtype);
  PyObject* code = PyDict_GetItem(g_torch_dtypes.ptr(), dt.ptr());  // borrowed
  if (!code)
    raise_invalid(cat("operand '", operand, "': ", nb::cast<std::string>(nb::str(dt)), " has no baracuda equivalent"));
  v.dtype = static_cast<DType>(PyLong_AsLong(code));
  nb::object shape = getattr_fast(t, n.shape);
  const Py_ssize_t rank = PyTuple_Check(shape.ptr()) ? PyTuple_GET_SIZE(shape.ptr()) : -1;
  if (rank < 0) {
    set_shape(&v, shape, operand);
  } else {
    if (rank > kMaxRank) raise_invalid(cat("operand '", operand, "': rank ", rank, " exceeds ", kMaxRank));
    v.rank = static_cast<int>(rank);
    for (Py_ssize_t d = 0; d < rank; ++d) v.shape[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape.ptr(), d));
  }
  nb::object st = nb::steal(PyObject_CallMethodNoArgs(t.ptr(), n.stride.ptr()));
  if (!st.is_valid()) throw nb::python_error();
  for (int d = 0; d < v.rank; ++d) v.stride[d] = nb::cast<int64_t>(st[d]);
  nb::object ptr = nb::steal(PyObject_CallMethodNoArgs(t.ptr(), n.data_ptr.ptr()));
  if (!ptr.is_valid()) throw nb::python_error();
  v.data = reinterpret_cast<void*>(static_cast<uintptr_t>(PyLong_AsUnsignedLongLong(ptr.ptr())));
  return v;
}

// numpy-style type strings of __cuda_array_interface__ ('<f4', '|b1', ...).
DType from_typestr(std::string_view s, std::string_view operand) {
  if (s.size() >= 3 && (s[0] == '<' || s[0] == '|' || s[0] == '=')) {
    const std::string_view k = s.substr(1);
    if (k == "f4") return DType::f32;
    if (k == "f2") return DType::f16;
    if (k == "f8") return DType::f64;
    if (k == "i1") return DType::i8;
    if (k == "u1") return DType::u8;
    if (k == "i2") return DType::i16;
    if (k == "i4") return DType::i32;
    if (k == "i8") return DType::i64;
    if (k == "b1") return DType::boolean;
  }
  raise_invalid(cat("operand '", operand, "': __cuda_array_interface__ typestr '", s, "' has no baracuda equivalent"));
}

TensorMut from_cai(nb::handle obj, std::string_view operand) {
  nb::dict cai = nb::cast<nb::dict>(obj.attr("__cuda_array_interface__"));
  TensorMut v;
  v.dtype = from_typestr(nb::cast<std::string>(cai["typestr"]), operand);
  set_shape(&v, cai["shape"], operand);
  nb::tuple data = nb::cast<nb::tuple>(cai["data"]);
  v.data = reinterpret_cast<void*>(nb::cast<uintptr_t>(data[0]));
  const int64_t es = static_cast<int64_t>(dtype_size(v.dtype));
  if (cai.contains("strides") && !cai["strides"].is_none()) {
    nb::handle st = cai["strides"];
    for (int d = 0; d < v.rank; ++d) {
      const int64_t b = nb::cast<int64_t>(st[d]);
      if (b % es != 0)
        raise_invalid(cat("operand '", operand, "': stride[", d, "] = ", b, " bytes is not a multiple of the element size"));
      v.stride[d] = b / es;
    }
  } else {
    v.set_contiguous_strides();
  }
  return v;
}

// DLPack's managed tensor (the capsule's payload); declared here, ABI-identical to dlpack.h.
struct ManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor*);
};

TensorMut from_dlpack_object(nb::handle obj, std::string_view operand, int64_t dlpack_stream) {
  nb::object cap;
  try {
    cap = obj.attr("__dlpack__")(nb::arg("stream") = dlpack_stream);
  } catch (nb::python_error&) {
    cap = obj.attr("__dlpack__")();
  }
  auto* m = static_cast<ManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
  if (!m) {
    PyErr_Clear();
    raise_invalid(cat("operand '", operand, "': __dlpack__ did not return an unconsumed 'dltensor' capsule"));
  }
  const DLDeviceType dev = m->dl_tensor.device.device_type;
  if (dev != kDLCUDA && dev != kDLCUDAManaged)
    raise_invalid(cat("operand '", operand, "': DLPack device type ", static_cast<int>(dev),
                      " is not CUDA memory; baracuda runs on CUDA device memory"));
  Result<TensorMut> v = from_dlpack_mut(m->dl_tensor);
  if (!v) raise(Status(v.status().code(), cat("operand '", operand, "': ", v.status().message())));
  return *v;  // the capsule (unconsumed) frees its payload; the object keeps the memory alive
}

TensorMut to_view(nb::handle obj, std::string_view operand, int64_t dlpack_stream) {
  if (g_torch_tensor.is_valid() && PyObject_IsInstance(obj.ptr(), g_torch_tensor.ptr()) == 1) return from_torch(obj, operand);
  if (nb::hasattr(obj, "__cuda_array_interface__")) return from_cai(obj, operand);
  if (nb::hasattr(obj, "__dlpack__")) return from_dlpack_object(obj, operand, dlpack_stream);
  raise_invalid(cat("operand '", operand, "': a ", nb::cast<std::string>(nb::str(obj.type().attr("__name__"))),
                    " is not a device array (it has neither __cuda_array_interface__ nor __dlpack__)"));
}

// Views bound by name: {"q": tensor, "in": [a, b], "bias": None}; a list binds "in[0]", "in[1]".
// None leaves the operand unbound (an optional operand the op then skips).
struct Bound {
  std::vector<std::string> names;  // list elements' names (never reallocated: views point into them)
  std::vector<NamedView> views;
};

Bound bind(nb::dict views, int64_t dlpack_stream) {
  Bound b;
  size_t elements = 0;  // list elements: their names are reserved so that views can point into them
  for (auto [k, obj] : views)
    if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) elements += nb::len(obj);
  b.names.reserve(elements);
  b.views.reserve(views.size() + elements);
  for (auto [k, obj] : views) {
    Py_ssize_t len = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(k.ptr(), &len);  // owned by the key, alive for the call
    if (!utf8) throw nb::python_error();
    const std::string_view name(utf8, static_cast<size_t>(len));
    if (obj.is_none()) continue;
    if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) {
      size_t i = 0;
      for (nb::handle e : obj) {
        if (!e.is_none()) {
          b.names.push_back(cat(name, "[", i, "]"));
          b.views.push_back({b.names.back(), to_view(e, b.names.back(), dlpack_stream)});
        }
        ++i;
      }
    } else {
      b.views.push_back({name, to_view(obj, name, dlpack_stream)});
    }
  }
  return b;
}

// ---------------------------------------------------------------- reports as Python values

nb::dict operand_dict(const OperandSpec& s) {
  nb::dict d;
  d["name"] = std::string(s.name);
  d["role"] = std::string(enum_name(s.role));
  d["dtype"] = std::string(dtype_name(s.dtype));
  nb::list shape, stride;
  for (int i = 0; i < s.rank; ++i) {
    shape.append(s.shape[i]);
    stride.append(s.stride[i]);
  }
  d["shape"] = nb::tuple(shape);
  d["strides"] = s.fixed_strides ? nb::object(nb::tuple(stride)) : nb::none();
  d["optional"] = s.optional;
  d["any_shape"] = s.any_shape;
  d["alignment"] = s.alignment;
  nb::list aliases;
  for (int i = 0; i < 32; ++i)
    if (s.alias_mask & (1u << i)) aliases.append(i);
  d["may_alias_inputs"] = aliases;
  return d;
}

nb::dict guarantee_dict(const PrecisionGuarantee& g) {
  nb::dict d;
  d["accumulator"] = std::string(dtype_name(g.accumulator));
  d["math"] = std::string(dtype_name(g.math));
  d["bit_exact"] = g.bit_exact;
  d["determinism"] = std::string(enum_name(g.determinism));
  d["tf32_inputs"] = g.tf32_inputs;
  d["split_k"] = g.split_k;
  return d;
}

PlanPreference preference(const std::string& line) {
  PlanPreference p;
  if (Status s = from_string(line, &p); !s.ok()) raise(Status(s.code(), cat("preference: ", s.message())));
  return p;
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "baracuda's op table (the C++ library) from Python; use the baracuda package, not this module";
  m.attr("__version__") = BARACUDA_VERSION_STRING;

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      nb::object args = nb::make_tuple(e.code, e.message);
      if (g_error_type.is_valid()) PyErr_SetObject(g_error_type.ptr(), args.ptr());
      else PyErr_SetString(PyExc_RuntimeError, (e.code + ": " + e.message).c_str());
    }
  });

  m.def("_set_error_type", [](nb::object t) { g_error_type = t.release(); });
  m.def("_set_torch", [](nb::object tensor_type, nb::dict dtypes) {
    g_torch_tensor = tensor_type.release();
    g_torch_dtypes = dtypes.release();
  });
  m.def("_release", [] {  // atexit: the references above, while the interpreter still runs
    for (nb::handle* h : {&g_error_type, &g_torch_tensor, &g_torch_dtypes}) {
      h->dec_ref();
      *h = nb::handle();
    }
  });

  m.def("ops", [] {
    nb::list rows;
    for (const OpInfo& i : op_table())
      rows.append(nb::make_tuple(std::string(i.name), std::string(i.family),
                                 i.direction == Direction::kBackward ? "backward" : "forward", std::string(i.plan)));
    return rows;
  }, "The op table: (name, family, direction, plan type) per row.");
  m.def("fields", [](const std::string& op) {
    auto f = AnyPlan::fields(op);
    if (!f) raise(f.status());
    nb::list out;
    for (const auto& [name, value] : *f) out.append(nb::make_tuple(name, value));
    return out;
  }, "The descriptor fields of `op` and their defaults in the problem-line syntax.");
  m.def("dtypes", [] {
    nb::list out;
    for (int i = 0; i < kNumDTypes; ++i) {
      const DType t = static_cast<DType>(i);
      out.append(nb::make_tuple(std::string(dtype_name(t)), i, static_cast<int>(dtype_size(t))));
    }
    return out;
  }, "(name, code, bytes) of every dtype.");
  m.def("elementwise_ops", [] {
    nb::list out;
    for (const auto& e : EnumTraits<EwOp>::kEntries)
      out.append(nb::make_tuple(std::string(e.name), ew_op_arity(e.value), ew_op_grad_mask(e.value)));
    return out;
  }, "(name, arity, grad mask: bit i = differentiable in operand i) of every elementwise op (the elementwise row's `op` field).");
  m.def("current_device", [] {
    int d = -1;
    if (cudaGetDevice(&d) != cudaSuccess) {
      (void)cudaGetLastError();
      return -1;
    }
    return d;
  });

  nb::class_<AnyPlan::Bound>(m, "Bound", "A plan with its views bound once (AnyPlan::bind): run() skips the binding")
      .def(
          "run",
          [](const AnyPlan::Bound& b, uintptr_t workspace, size_t workspace_bytes, uintptr_t stream) {
            check(b.run(reinterpret_cast<cudaStream_t>(stream), Workspace{reinterpret_cast<void*>(workspace), workspace_bytes}));
          },
          nb::arg("workspace") = 0, nb::arg("workspace_bytes") = 0, nb::arg("stream") = 0);

  nb::class_<AnyPlan>(m, "Plan")
      .def_static(
          "select",
          [](const std::string& op, const std::string& problem, const std::string& pref) {
            Result<AnyPlan> p = AnyPlan::select(op, problem, preference(pref));
            if (!p) raise(p.status());
            return std::move(*p);
          },
          nb::arg("op"), nb::arg("problem"), nb::arg("preference") = "")
      .def_prop_ro("op", [](const AnyPlan& p) { return std::string(p.op().name); })
      .def_prop_ro("family", [](const AnyPlan& p) { return std::string(p.op().family); })
      .def_prop_ro("problem", &AnyPlan::problem)
      .def_prop_ro("repro", &AnyPlan::repro)
      .def_prop_ro("sku", [](const AnyPlan& p) { return p.sku().name(); })
      .def_prop_ro("workspace_size", &AnyPlan::workspace_size)
      .def_prop_ro("precision_guarantee", [](const AnyPlan& p) { return guarantee_dict(p.precision_guarantee()); })
      .def_prop_ro("operands", [](const AnyPlan& p) {
        nb::list out;
        for (const OperandSpec& s : p.operands()) out.append(operand_dict(s));
        return out;
      })
      .def(
          "can_implement",
          [](const AnyPlan& p, nb::dict views) {
            Bound b = bind(views, -1);
            check(p.can_implement(b.views));
          },
          nb::arg("views"))
      .def(
          "bind",
          [](const AnyPlan& p, nb::dict views) {
            Bound b = bind(views, -1);
            Result<AnyPlan::Bound> r = p.bind(b.views);
            if (!r) raise(r.status());
            return std::move(*r);
          },
          nb::arg("views"), "Checks the views once (can_implement) and binds them; the caller keeps them alive")
      .def(
          "run",
          [](const AnyPlan& p, nb::dict views, uintptr_t workspace, size_t workspace_bytes, uintptr_t stream,
             int64_t dlpack_stream) {
            Bound b = bind(views, dlpack_stream);
            check(p.run(reinterpret_cast<cudaStream_t>(stream), Workspace{reinterpret_cast<void*>(workspace), workspace_bytes},
                        b.views));
          },
          nb::arg("views"), nb::arg("workspace") = 0, nb::arg("workspace_bytes") = 0, nb::arg("stream") = 0,
          nb::arg("dlpack_stream") = -1,
          "Runs on `stream` (a cudaStream_t as an integer). dlpack_stream is passed to __dlpack__ "
          "producers (-1: the caller orders the work)");
}
