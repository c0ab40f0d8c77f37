// A C++17 host of user-questions: RAII handles, a provider answering on a std::thread, and
// an asynchronous ask completed through a std::promise.
//
//   c++ -std=c++17 ask.cpp $(pkg-config --cflags --libs user_questions) -lpthread -o ask
#include <condition_variable>
#include <cstdint>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "user_questions.h"

namespace {

struct ContextDeleter {
  void operator()(uq_context *ctx) const {
    uq_context_free(ctx);
  }
};
struct StringDeleter {
  void operator()(char *s) const {
    uq_string_free(s);
  }
};
using Context = std::unique_ptr<uq_context, ContextDeleter>;
using OwnedString = std::unique_ptr<char, StringDeleter>;

// The provider: tickets arrive on the asking thread; a worker thread answers them.
class ThreadedProvider {
public:
  explicit ThreadedProvider(uq_context *ctx) : ctx_(ctx), worker_([this] { Run(); }) {}
  ~ThreadedProvider() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    worker_.join();
  }

  uq_provider Callbacks() const {
    return uq_provider{
        [](void *self, std::uint64_t ticket, const char *) {
          auto *p = static_cast<ThreadedProvider *>(self);
          {
            std::lock_guard<std::mutex> lock(p->mu_);
            p->ticket_ = ticket;
          }
          p->cv_.notify_one();
        },
        nullptr, // withdraw: optional
        nullptr, // release: optional (this object outlives the context)
    };
  }

private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || ticket_.has_value(); });
      if (stop_)
        return;
      std::uint64_t ticket = *ticket_;
      ticket_.reset();
      lock.unlock();
      uq_answer(ctx_, ticket,
                R"json({"answers":[{"id":"pkg","selected":["pnpm (Recommended)"]}]})json", nullptr);
      lock.lock();
    }
  }

  uq_context *ctx_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<std::uint64_t> ticket_;
  bool stop_ = false;
  std::thread worker_;
};

struct Outcome {
  uq_code code;
  std::string json;
};

} // namespace

int main() {
  Context ctx(uq_context_new());
  ThreadedProvider provider(ctx.get());
  uq_provider callbacks = provider.Callbacks();
  std::uint64_t registration = 0;
  if (uq_register_provider(ctx.get(), &callbacks, &provider, &registration) != UQ_OK)
    return 1;

  // uq_ask: the callback fires once, here on the provider's worker thread.
  std::promise<Outcome> promise;
  auto settled = promise.get_future();
  const char *request = R"json({"questions":[{"id":"pkg","question":"Which package manager?",)json"
                        R"json("options":[{"label":"pnpm (Recommended)"},{"label":"npm"}]}]})json";
  uq_code code = uq_ask(
      ctx.get(), request, nullptr, nullptr,
      [](void *user_data, uq_code code, const char *json) {
        static_cast<std::promise<Outcome> *>(user_data)->set_value(Outcome{code, json});
      },
      &promise);
  if (code != UQ_OK)
    return 1;
  Outcome outcome = settled.get();
  std::cout << uq_code_name(outcome.code) << " " << outcome.json << "\n";

  // The tool, as a model would call it.
  std::cout << "tool definition: " << std::string(uq_tool_definition()).substr(0, 29) << "...\n";

  uq_unregister_provider(ctx.get(), registration);
  char *raw = nullptr;
  uq_pending(ctx.get(), &raw);
  OwnedString pending(raw);
  std::cout << "pending after unregister: " << pending.get() << "\n";
  return outcome.code == UQ_OK &&
                 outcome.json ==
                     R"json({"answers":[{"id":"pkg","selected":["pnpm (Recommended)"]}]})json"
             ? 0
             : 1;
}
