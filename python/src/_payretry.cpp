// _payretry: the private extension under the `payretry` package, bound over
// payretry.hpp (and so over the public C ABI), never over engine internals.
//
// The GIL is released around every call that may touch the network, sleep in
// a backoff or wait on the ledger, and re-acquired only inside the callbacks
// that reach into Python (log lines, the request hook, reconcile's body_for).
// No thread holds the GIL while it waits for another thread that may need it
// (an engine thread running a hook or a done callback). A closed client
// is only dropped by its Python owner: calls still running keep the C client
// alive through their own reference, so close() never frees it under them.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <payretry/payretry.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace {

// Set once by the pure-Python package at import, and never destroyed: a C
// thread may still log while the interpreter tears the module down.
py::object* g_error_factory = nullptr;  // (code, message, closed) -> exception instance
py::object* g_log_sink = nullptr;       // (level, line) -> None

// Raised when a closed client is used; becomes payretry.ClientClosedError.
struct closed_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool interpreter_gone() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// The library's strings are mostly ASCII, but order ids and provider fields
// are caller or provider data: never let a stray byte turn into an exception.
py::str text(std::string_view s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

py::object opt_text(const std::optional<std::string_view>& s) {
  if (!s) return py::none();
  return text(*s);
}

void raise_pay(int code, const char* message, bool closed) {
  if (!g_error_factory) {
    PyErr_SetString(PyExc_RuntimeError, message);
    return;
  }
  try {
    py::object exc = (*g_error_factory)(code, text(message), closed);
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  } catch (py::error_already_set& e) {
    e.restore();
  }
}

// Runs on whichever thread called into the library, with the GIL released.
void log_line(int level, std::string_view line) noexcept {
  if (!g_log_sink || !Py_IsInitialized() || interpreter_gone()) return;
  py::gil_scoped_acquire gil;
  try {
    (*g_log_sink)(level, text(line));
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable("payretry log sink");
  } catch (...) {
    // A log line must never break a payment.
  }
}

// A Python object shared with C++ callbacks that may be destroyed on a thread
// without the GIL (the C client's destructor, an engine thread): its
// reference count may only change under the GIL, and not at all once the
// interpreter is finalizing (then it is leaked).
std::shared_ptr<py::object> shared_pyobject(py::object o) {
  return std::shared_ptr<py::object>(new py::object(std::move(o)), [](py::object* p) {
    if (interpreter_gone()) return;
    py::gil_scoped_acquire gil;
    delete p;
  });
}

// The extra headers of one attempt, handed to the Python request hook. It
// points into the C library's pay_headers only for the length of the hook
// call: afterwards add() raises instead of writing where it may not.
class NativeHeaders {
 public:
  explicit NativeHeaders(pay::headers* h) noexcept : h_(h) {}

  void add(const std::string& name, const std::string& value) {
    if (!h_) throw pay::error(PAY_EINVALID, "request hook headers can only be added during the hook call");
    const int rc = pay_headers_add(h_->get(), name.c_str(), value.c_str());
    if (rc != PAY_OK) {
      const pay::error e = pay::error::from_last(rc);
      // The library's message says what is wrong but not which header; the
      // name is no secret, the value may be (a signature): never echo it.
      throw pay::error(rc, "request hook header " + name + ": " + e.what());
    }
  }

  void invalidate() noexcept { h_ = nullptr; }

 private:
  pay::headers* h_;
};

// The C request hook over a Python callable `(headers, method, url, path,
// order_id, idempotency_key, body, attempt, unix_time_ms) -> bool` (True:
// send). It runs on the thread that made the call, or on an engine thread,
// with the GIL released there: it takes the GIL for the Python call only.
pay::request_hook python_request_hook(py::object hook) {
  std::shared_ptr<py::object> fn = shared_pyobject(std::move(hook));
  return [fn](pay::headers& hs, const pay_attempt_info& info) -> bool {
    // Too late to ask Python: refuse rather than send what the hook would
    // have signed. Nothing is sent unsigned; the payment ends as the library
    // documents for a refusing hook (PAY_EHOOK or UNKNOWN).
    if (!Py_IsInitialized() || interpreter_gone()) return false;
    py::gil_scoped_acquire gil;
    try {
      py::object headers = py::cast(NativeHeaders(&hs));
      NativeHeaders* view = headers.cast<NativeHeaders*>();
      struct invalidate_after {
        NativeHeaders* v;
        ~invalidate_after() { v->invalidate(); }
      } guard{view};
      const char* body = static_cast<const char*>(info.body);
      py::object send = (*fn)(headers, text(info.method ? info.method : ""), text(info.url ? info.url : ""),
                              text(info.path ? info.path : ""), text(info.order_id ? info.order_id : ""),
                              text(info.idempotency_key ? info.idempotency_key : ""),
                              py::bytes(body ? body : "", body ? info.body_len : 0), info.attempt, info.unix_time_ms);
      return send.cast<bool>();
    } catch (py::error_already_set& e) {
      // The package's wrapper catches the user's exceptions itself; this is
      // a bug there, reported rather than lost. The attempt is not sent.
      e.discard_as_unraisable("payretry request hook");
      return false;
    } catch (...) {
      return false;
    }
  };
}

// Frees a C client without the GIL, whoever drops the last reference: a
// running call returning after close(), close() itself, or the garbage
// collector. Freeing waits for the payments on the client's engine thread,
// and their answers need the GIL to reach Python.
struct FreeWithoutGil {
  void operator()(pay::client* c) const {
    if (!interpreter_gone() && PyGILState_Check()) {
      py::gil_scoped_release nogil;
      delete c;
    } else {
      delete c;
    }
  }
};

// reconcile's body_for, called on the thread that called pay_reconcile
// (which released the GIL): the order's body as bytes, or None for "no body".
int body_for_tramp(pay_body* out, const char* order_id, void* payload) noexcept {
  if (!Py_IsInitialized() || interpreter_gone()) return 1;
  py::gil_scoped_acquire gil;
  try {
    const py::object& body_for = *static_cast<const py::object*>(payload);
    py::object b = body_for(text(order_id ? order_id : ""));
    if (b.is_none()) return 1;
    const std::string bytes = py::bytes(b);
    return pay_body_set(out, bytes.data(), bytes.size()) == PAY_OK ? 0 : 1;
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable("payretry reconcile body_for");
    return 1;  // no body: the payment stays UNKNOWN, with the reason
  } catch (...) {
    return 1;
  }
}

class NativeClient {
 public:
  NativeClient(const std::string& config_json, bool with_log, const py::object& request_hook) {
    // Built with the GIL held: it takes a reference to the hook.
    pay::request_hook hook;
    if (!request_hook.is_none()) hook = python_request_hook(request_hook);
    pay::log_callback log;
    if (with_log) log = &log_line;
    py::gil_scoped_release nogil;  // opening the ledger may do disk or network I/O
    c_ = std::shared_ptr<pay::client>(new pay::client(config_json, std::move(log), std::move(hook)), FreeWithoutGil{});
  }

  pay::result submit(const std::string& order_id, const py::bytes& body,
                     const std::optional<std::string>& idempotency_key, const std::optional<std::string>& path,
                     long long deadline_ms, std::vector<std::pair<std::string, std::string>> headers,
                     const std::optional<std::string>& traceparent) {
    std::shared_ptr<pay::client> c = get();
    const std::string bytes = body;  // the exact bytes of every attempt, copied while we hold the GIL
    const pay::submit_options o = options(idempotency_key, path, deadline_ms, std::move(headers), traceparent);
    py::gil_scoped_release nogil;
    return c->submit(order_id, bytes, o);
  }

  // Starts one payment on the client's engine thread (libcurl multi, group
  // commit) and returns at once. `done(result, code, message)` is called once,
  // on that thread, with the GIL held: a NativeResult and 0, or None and the
  // failed call's code and message. Nothing here waits, nothing blocks a thread.
  void submit_async(const std::string& order_id, const py::bytes& body,
                    const std::optional<std::string>& idempotency_key, const std::optional<std::string>& path,
                    long long deadline_ms, std::vector<std::pair<std::string, std::string>> headers,
                    const std::optional<std::string>& traceparent, py::function done) {
    std::shared_ptr<pay::client> c = get();
    const std::string bytes = body;
    const pay::submit_options o = options(idempotency_key, path, deadline_ms, std::move(headers), traceparent);
    // The callback object travels to the engine thread and dies there.
    std::shared_ptr<py::object> fn = shared_pyobject(std::move(done));
    py::gil_scoped_release nogil;
    c->submit_async(
        order_id, bytes,
        [fn](pay::answer a) {
          if (interpreter_gone()) return;
          py::gil_scoped_acquire gil;
          try {
            if (a.result)
              (*fn)(py::cast(std::move(*a.result)), 0, py::none());
            else
              (*fn)(py::none(), a.failure->code(), text(a.failure->what()));
          } catch (py::error_already_set& e) {
            e.discard_as_unraisable("payretry submit_async callback");
          } catch (...) {
            // An answer that cannot be delivered must not stop the engine.
          }
        },
        o);
  }

  // Many payments at once on the engine thread, the GIL released until every
  // one has its answer: a list of (NativeResult or None, code, message).
  py::list submit_many(const py::list& payments, size_t max_in_flight) {
    std::shared_ptr<pay::client> c = get();
    std::vector<pay::payment> ps;
    ps.reserve(payments.size());
    for (const py::handle item : payments) {
      const py::tuple t = py::reinterpret_borrow<py::tuple>(item);
      pay::payment p;
      p.order_id = t[0].cast<std::string>();
      p.body = t[1].cast<py::bytes>();
      if (!t[2].is_none()) p.options.idempotency_key = t[2].cast<std::string>();
      if (!t[3].is_none()) p.options.path = t[3].cast<std::string>();
      p.options.deadline = std::chrono::milliseconds(t[4].cast<long long>());
      ps.push_back(std::move(p));
    }
    std::vector<pay::answer> answers;
    {
      py::gil_scoped_release nogil;
      answers = c->submit_batch(ps, max_in_flight);
    }
    py::list out;
    for (pay::answer& a : answers) {
      if (a.result)
        out.append(py::make_tuple(py::cast(std::move(*a.result)), 0, py::none()));
      else
        out.append(py::make_tuple(py::none(), a.failure->code(), text(a.failure->what())));
    }
    return out;
  }

  // A capture, refund or cancel (pay_submit_operation) of a payment in the
  // ledger; the GIL released while it is sent, retried and settled.
  pay::result submit_operation(const std::string& order_id, int kind, const std::string& ref, int64_t amount,
                               const std::optional<std::string>& body, const std::optional<std::string>& target_id,
                               long long deadline_ms) {
    std::shared_ptr<pay::client> c = get();
    pay::operation_options o;
    o.ref = ref;
    o.amount = amount;
    o.body = body;
    o.target_id = target_id;
    o.deadline = std::chrono::milliseconds(deadline_ms);
    py::gil_scoped_release nogil;
    return c->submit_operation(order_id, static_cast<pay::operation>(kind), o);
  }

  pay::result query(const std::string& order_id) {
    std::shared_ptr<pay::client> c = get();
    py::gil_scoped_release nogil;
    return c->query(order_id);
  }

  // Through the C API itself: payretry.hpp has no reconcile options yet.
  py::str reconcile(const py::object& body_for, uint32_t limit, int64_t older_than_ms) {
    std::shared_ptr<pay::client> c = get();
    pay_reconcile_options o;
    pay::check(pay_reconcile_options_init(&o, PAY_RECONCILE_OPTIONS_VERSION));
    o.limit = limit;
    o.older_than_ms = older_than_ms;
    if (!body_for.is_none()) {
      o.body_for = &body_for_tramp;
      o.body_payload = const_cast<py::object*>(&body_for);  // lives on this frame, past the call
    }
    pay_buf report{nullptr, 0};
    int rc;
    {
      py::gil_scoped_release nogil;
      rc = pay_reconcile(&report, c->get(), &o);
    }
    const std::string s = pay::detail::take(report);
    pay::check(rc);
    return text(s);
  }

  // A provider's notification as received: (status, content_type, body
  // bytes, outcome JSON). The GIL is released while the library verifies it
  // and writes the ledger (and, for Mollie, asks the provider).
  py::tuple apply_webhook(const std::string& method, const std::string& url,
                          const std::vector<std::pair<std::string, std::string>>& headers, const py::bytes& body) {
    std::shared_ptr<pay::client> c = get();
    const std::string bytes = body;  // copied while we hold the GIL
    pay::webhook_reply r;
    {
      py::gil_scoped_release nogil;
      r = c->apply_webhook(method, url, headers, bytes);
    }
    return py::make_tuple(r.status, text(r.content_type), py::bytes(r.body), text(r.outcome));
  }

  py::str ledger_get(const std::string& order_id) {
    std::shared_ptr<pay::client> c = get();
    std::string s;
    {
      py::gil_scoped_release nogil;
      s = c->ledger_get(order_id);
    }
    return text(s);
  }

  py::str ledger_list(const std::optional<std::string>& state, int64_t updated_before_ms, uint32_t limit) {
    std::shared_ptr<pay::client> c = get();
    std::string s;
    {
      py::gil_scoped_release nogil;
      s = c->ledger_list(state ? std::optional<std::string_view>(*state) : std::nullopt, updated_before_ms, limit);
    }
    return text(s);
  }

  py::str stats() {
    std::shared_ptr<pay::client> c = get();
    std::string s;
    {
      py::gil_scoped_release nogil;
      s = c->stats();
    }
    return text(s);
  }

  py::str metrics() {
    std::shared_ptr<pay::client> c = get();
    std::string s;
    {
      py::gil_scoped_release nogil;
      s = c->metrics();
    }
    return text(s);
  }

  void reopen_log() {
    std::shared_ptr<pay::client> c = get();
    py::gil_scoped_release nogil;  // opening a file
    c->reopen_log();
  }

  // Drops our reference; the C client is freed (without the GIL, see
  // FreeWithoutGil) when the last running call, if any, returns. Idempotent.
  void close() {
    std::shared_ptr<pay::client> old;
    {
      std::lock_guard<std::mutex> lock(mu_);
      old.swap(c_);
    }
  }

  bool closed() {
    std::lock_guard<std::mutex> lock(mu_);
    return !c_;
  }

 private:
  static pay::submit_options options(const std::optional<std::string>& idempotency_key,
                                     const std::optional<std::string>& path, long long deadline_ms,
                                     std::vector<std::pair<std::string, std::string>> headers,
                                     const std::optional<std::string>& traceparent) {
    pay::submit_options o;
    o.idempotency_key = idempotency_key;
    o.path = path;
    o.deadline = std::chrono::milliseconds(deadline_ms);
    o.headers = std::move(headers);
    o.traceparent = traceparent;
    return o;
  }

  std::shared_ptr<pay::client> get() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!c_) throw closed_error("the payretry client is closed");
    return c_;
  }

  std::mutex mu_;
  std::shared_ptr<pay::client> c_;
};

}  // namespace

PYBIND11_MODULE(_payretry, m) {
  m.doc() = "Private extension of the payretry package; use `import payretry`.";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const closed_error& e) {
      raise_pay(PAY_EINVALID, e.what(), true);
    } catch (const pay::error& e) {
      raise_pay(e.code(), e.what(), false);
    }
  });

  m.def("_set_hooks", [](py::object error_factory, py::object log_sink) {
    // Leaked on purpose: see the comment on g_error_factory.
    g_error_factory = new py::object(std::move(error_factory));
    g_log_sink = new py::object(std::move(log_sink));
  }, py::arg("error_factory"), py::arg("log_sink"));

  m.def("version", []() { return std::string(pay::version()); }, "The library's version string.");
  m.def("version_number", &pay::version_number, "The library's PAY_VERSION_NUMBER.");
  m.attr("HEADER_VERSION_NUMBER") = PAY_VERSION_NUMBER;
  m.def("strerror", [](int code) { return std::string(pay_strerror(code)); }, py::arg("code"));
  // "?" for a number the C enum does not name (it is only appended to).
  m.def("money_state_name", [](int state) { return std::string(pay::to_string(static_cast<pay::money_state>(state))); },
        py::arg("state"));

#define PAY_PY_CODE_(name, value, text) m.attr(#name) = value;
  PAY_ERROR_MAP(PAY_PY_CODE_)
#undef PAY_PY_CODE_

  // Immutable: any thread may read it, and it outlives the client that made it.
  py::class_<pay::result>(m, "NativeResult")
      .def_property_readonly("outcome", [](const pay::result& r) { return static_cast<int>(r.outcome()); })
      .def_property_readonly("delivery", [](const pay::result& r) { return static_cast<int>(r.delivery()); })
      .def_property_readonly("money_state", [](const pay::result& r) { return static_cast<int>(r.money_state()); })
      .def_property_readonly("http_status", &pay::result::http_status)
      .def_property_readonly("body", [](const pay::result& r) {
        const std::string_view b = r.body();
        return py::bytes(b.data(), b.size());
      })
      .def_property_readonly("order_id", [](const pay::result& r) { return text(r.order_id()); })
      .def_property_readonly("idempotency_key", [](const pay::result& r) { return text(r.idempotency_key()); })
      .def_property_readonly("provider_payment_id", [](const pay::result& r) { return opt_text(r.provider_payment_id()); })
      .def_property_readonly("provider_status", [](const pay::result& r) { return opt_text(r.provider_status()); })
      .def_property_readonly("error", [](const pay::result& r) { return opt_text(r.error()); })
      .def_property_readonly("attempts", &pay::result::attempts)
      .def_property_readonly("from_ledger", &pay::result::from_ledger)
      .def_property_readonly("json", [](const pay::result& r) { return text(r.json()); });

  // Only the request hook's wrapper sees one, for the length of one hook call.
  py::class_<NativeHeaders>(m, "NativeHeaders")
      .def("add", &NativeHeaders::add, py::arg("name"), py::arg("value"));

  py::class_<NativeClient>(m, "NativeClient")
      .def(py::init<const std::string&, bool, const py::object&>(), py::arg("config_json"), py::arg("with_log"),
           py::arg("request_hook"))
      .def("submit", &NativeClient::submit, py::arg("order_id"), py::arg("body"), py::arg("idempotency_key"),
           py::arg("path"), py::arg("deadline_ms"), py::arg("headers"), py::arg("traceparent"))
      .def("submit_async", &NativeClient::submit_async, py::arg("order_id"), py::arg("body"),
           py::arg("idempotency_key"), py::arg("path"), py::arg("deadline_ms"), py::arg("headers"),
           py::arg("traceparent"), py::arg("done"))
      .def("submit_many", &NativeClient::submit_many, py::arg("payments"), py::arg("max_in_flight"))
      .def("submit_operation", &NativeClient::submit_operation, py::arg("order_id"), py::arg("kind"), py::arg("ref"),
           py::arg("amount"), py::arg("body"), py::arg("target_id"), py::arg("deadline_ms"))
      .def("query", &NativeClient::query, py::arg("order_id"))
      .def("reconcile", &NativeClient::reconcile, py::arg("body_for"), py::arg("limit"), py::arg("older_than_ms"))
      .def("apply_webhook", &NativeClient::apply_webhook, py::arg("method"), py::arg("url"), py::arg("headers"),
           py::arg("body"))
      .def("ledger_get", &NativeClient::ledger_get, py::arg("order_id"))
      .def("ledger_list", &NativeClient::ledger_list, py::arg("state"), py::arg("updated_before_ms"),
           py::arg("limit"))
      .def("stats", &NativeClient::stats)
      .def("metrics", &NativeClient::metrics)
      .def("reopen_log", &NativeClient::reopen_log)
      .def("close", &NativeClient::close)
      .def_property_readonly("closed", &NativeClient::closed);
}
