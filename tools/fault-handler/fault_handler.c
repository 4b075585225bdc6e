// tools/fault-handler/fault_handler.c: an LD_PRELOAD library that, on SIGSEGV, prints RIP, the
// words at the top of the stack resolved with dladdr (the caller, when RIP is 0 after a call
// through a null pointer) and a backtrace. For GPU nodes without gdb:
//   gcc -shared -fPIC -o /tmp/fault_handler.so tools/fault-handler/fault_handler.c -ldl
//   LD_PRELOAD=/tmp/fault_handler.so build-gpu/tests/model/weights_test
// (It found the libtorch.so std::filesystem::remove_all crash; see common/remove_tree.h.)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <ucontext.h>
#include <unistd.h>
static void where(const char* what, void* p) {
  Dl_info info;
  if (p && dladdr(p, &info) && info.dli_fname) {
    fprintf(stderr, "%s %p = %s(%s+0x%lx) base %p\n", what, p, info.dli_fname,
            info.dli_sname ? info.dli_sname : "?",
            (unsigned long)((char*)p - (char*)(info.dli_saddr ? info.dli_saddr : info.dli_fbase)),
            info.dli_fbase);
  } else {
    fprintf(stderr, "%s %p\n", what, p);
  }
}
static void on_fault(int sig, siginfo_t* info, void* ctx) {
  ucontext_t* uc = (ucontext_t*)ctx;
  void* rip = (void*)uc->uc_mcontext.gregs[REG_RIP];
  void** rsp = (void**)uc->uc_mcontext.gregs[REG_RSP];
  fprintf(stderr, "\n*** signal %d at address %p ***\n", sig, info->si_addr);
  where("rip", rip);
  for (int i = 0; i < 12; ++i) where("stack", rsp[i]);
  void* frames[64];
  int depth = backtrace(frames, 64);
  backtrace_symbols_fd(frames, depth, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}
__attribute__((constructor)) static void install(void) {
  struct sigaction sa = {0};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, 0);
}
