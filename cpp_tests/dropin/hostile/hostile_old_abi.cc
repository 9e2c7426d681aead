// One source of a program built with libstdc++'s old std::string
// (-D_GLIBCXX_USE_CXX11_ABI=0), as programs that mix objects from older toolchains are:
// the program then imports both layouts' string code.
#include <string>

extern "C" unsigned long hostile_old_abi_length(const char* text) {
  std::string s(text);
  s += " (old string)";
  return s.size();
}
