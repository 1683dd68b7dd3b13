// headway.Error and its subclasses, and the array views every binding shares.
#include "python/src/common.hpp"

#include <cstring>
#include <new>

namespace headway::python {
namespace {

// One exception class per Status code (index: the Code's value). The ValueError ones are what a
// caller's bad value raises; a call in the wrong state and a bug in headway are RuntimeErrors.
PyObject* g_errors[8] = {};

struct ErrorClass {
  Code code;
  const char* name;
  PyObject* python_base;
  const char* doc;
};

}  // namespace

void add_errors(nb::module_& m) {
  PyObject* error = PyErr_NewExceptionWithDoc(
      "headway.Error", "Base of every error headway raises; .code names the library's Status code.", PyExc_Exception,
      nullptr);
  if (error == nullptr) throw nb::python_error();
  m.attr("Error") = nb::steal(error);
  const ErrorClass classes[] = {
      {Code::kInvalidArgument, "InvalidArgument", PyExc_ValueError, "A value the caller gave is wrong."},
      {Code::kOutOfRange, "OutOfRange", PyExc_ValueError, "A position or size beyond what the plan allows."},
      {Code::kUnsupported, "Unsupported", PyExc_ValueError, "Valid input that headway does not handle."},
      {Code::kNotFound, "NotFound", PyExc_ValueError, "A file, preset or key that does not exist."},
      {Code::kDataLoss, "DataLoss", PyExc_ValueError, "A file that is truncated or corrupt."},
      {Code::kFailedPrecondition, "FailedPrecondition", PyExc_RuntimeError, "A call in the wrong state."},
      {Code::kInternal, "InternalError", PyExc_RuntimeError, "A bug in headway."},
  };
  g_errors[0] = error;  // a code outside the table falls back to the base
  for (const ErrorClass& c : classes) {
    const std::string qualified = std::string("headway.") + c.name;
    nb::object bases = nb::make_tuple(nb::handle(error), nb::handle(c.python_base));
    PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), c.doc, bases.ptr(), nullptr);
    if (cls == nullptr) throw nb::python_error();
    m.attr(c.name) = nb::steal(cls);
    g_errors[static_cast<size_t>(c.code)] = cls;
  }
}

void raise_status(const Status& status) {
  const size_t index = static_cast<size_t>(status.code());
  PyObject* cls = index < 8 && g_errors[index] != nullptr ? g_errors[index] : g_errors[0];
  nb::object instance = nb::steal(PyObject_CallFunction(cls, "s", status.message()));
  if (!instance.is_valid()) throw nb::python_error();
  if (PyObject_SetAttrString(instance.ptr(), "code", nb::str(code_name(status.code())).ptr()) != 0) {
    throw nb::python_error();
  }
  PyErr_SetObject(cls, instance.ptr());
  throw nb::python_error();
}

size_t Tensor::elements() const {
  size_t n = 1;
  for (uint32_t d : shape) n *= d;
  return n;
}

Tensor view(nb::handle obj, const char* name, size_t ndim, Accept accept, const char* layout) {
  Tensor t;
  if (!nb::try_cast<AnyArray>(obj, t.array)) {
    const std::string type = nb::type_name(obj.type()).c_str();
    HEADWAY_PY_INVALID("%s: expected a NumPy array %s, got %s", name, layout, type.c_str());
  }
  const AnyArray& a = t.array;
  const nb::dlpack::dtype dt = a.dtype();
  const bool f32 = dt == nb::dtype<float>();
  const bool f16 = dt.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Float) && dt.bits == 16 && dt.lanes == 1;
  const bool boolean = dt.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Bool) && dt.bits == 8;
  const bool ok = f32 || (accept == Accept::kF32OrF16 && f16) || (accept == Accept::kF32OrBool && boolean);
  if (!ok) {
    const char* expected = accept == Accept::kF32        ? "float32"
                           : accept == Accept::kF32OrF16 ? "float32 or float16"
                                                         : "bool (True = visible) or float32 (added to the logit)";
    const char* code = dt.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Float)  ? "float"
                       : dt.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Int)  ? "int"
                       : dt.code == static_cast<uint8_t>(nb::dlpack::dtype_code::UInt) ? "uint"
                       : dt.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Bool) ? "bool"
                                                                                       : "other";
    HEADWAY_PY_INVALID("%s: dtype %s%u, expected %s (convert with .astype(numpy.float32))", name, code,
                       static_cast<unsigned>(dt.bits), expected);
  }
  if (a.ndim() != ndim) {
    std::string shape = "(";
    for (size_t i = 0; i < a.ndim(); ++i) shape += (i ? ", " : "") + std::to_string(a.shape(i));
    shape += a.ndim() == 1 ? ",)" : ")";
    HEADWAY_PY_INVALID("%s: shape %s has %zu dims, expected %zu %s", name, shape.c_str(), a.ndim(), ndim, layout);
  }
  // C-contiguous: each stride (in elements) is the product of the dims after it; a dim of size 1
  // may have any stride, and so may every dim of an empty array (the library rejects its shape).
  int64_t expected = 1;
  const bool empty = a.size() == 0;
  for (size_t i = ndim; !empty && i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expected) {
      HEADWAY_PY_INVALID(
          "%s: not C-contiguous (stride %lld elements in dim %zu, expected %lld); headway reads arrays "
          "in place: pass numpy.ascontiguousarray(%s)",
          name, static_cast<long long>(a.stride(i)), i, static_cast<long long>(expected), name);
    }
    expected *= static_cast<int64_t>(a.shape(i));
  }
  for (size_t i = 0; i < ndim; ++i) {
    if (a.shape(i) > UINT32_MAX) {
      HEADWAY_PY_INVALID("%s: dim %zu is %zu, more than %u", name, i, a.shape(i), UINT32_MAX);
    }
    t.shape.push_back(static_cast<uint32_t>(a.shape(i)));
  }
  t.data = a.data();
  t.boolean = boolean;
  t.dtype = f16 ? DType::kF16 : DType::kF32;
  return t;
}

OutArray new_f32(const std::vector<size_t>& shape, float** data) {
  size_t n = 1;
  for (size_t d : shape) n *= d;
  float* p = new float[n ? n : 1];
  nb::capsule owner(p, [](void* q) noexcept { delete[] static_cast<float*>(q); });
  *data = p;
  return OutArray(p, shape.size(), shape.data(), owner);
}

BackendKind parse_backend(const std::string& text) {
  BackendKind k{};
  if (backend_from_name(text.c_str(), &k)) return k;
  HEADWAY_PY_INVALID("backend '%s' is not one of %s", text.c_str(), kBackendNames);
}

DType parse_dtype(const std::string& text, const char* field, bool blocks_allowed) {
  DType t{};
  if (dtype_from_name(text.c_str(), &t) && (blocks_allowed ? dtype_stores_kv(t) : dtype_plans_weights(t))) return t;
  HEADWAY_PY_INVALID("%s '%s' is not one of %s", field, text.c_str(),
                     blocks_allowed ? kKvDTypeNames : kPlannedWeightDTypeNames);
}

KvRotation parse_kv_rotation(const std::string& text) {
  KvRotation r{};
  if (kv_rotation_from_name(text.c_str(), &r)) return r;
  HEADWAY_PY_INVALID("kv_rotation '%s' is not one of %s", text.c_str(), kKvRotationNames);
}

uint32_t to_u32(int64_t value, const char* field, uint32_t min) {
  if (value < static_cast<int64_t>(min) || value > static_cast<int64_t>(UINT32_MAX)) {
    HEADWAY_PY_INVALID("%s %lld is out of range (%u..%u)", field, static_cast<long long>(value), min, UINT32_MAX);
  }
  return static_cast<uint32_t>(value);
}

AlignedBytes aligned_bytes(size_t bytes) {
  const size_t size = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = size ? std::aligned_alloc(kAlignment, size) : nullptr;
  if (size && p == nullptr) throw std::bad_alloc();
  return AlignedBytes(static_cast<uint8_t*>(p));
}

}  // namespace headway::python
