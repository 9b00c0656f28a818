// Installed-tree consumer, C++: loads MODEL (x: float[5] -> res: float[1,5]), runs it on 1..5 and
// checks the result with the C++ API. Exit 0 on success.
#include <cstring>
#include <iostream>
#include <vector>

#include "idem/idem.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto session = idem::Session::Create(argv[1]);
  if (!session.ok()) {
    std::cerr << "error: " << session.status().message() << "\n";
    return 1;
  }
  std::vector<float> data = {1, 2, 3, 4, 5};
  auto x = idem::Value::MakeTensor(idem::ElementType::kFloat, {5},
                                   idem::Buffer::Borrow(data.data(), data.size() * 4));
  if (!x.ok()) return 1;
  auto outputs = session->Run({*x});
  if (!outputs.ok()) {
    std::cerr << "error: " << outputs.status().message() << "\n";
    return 1;
  }
  const idem::Value& res = (*outputs)[0];
  if (!res.is_tensor() || res.type().ToShortString() != "float[1,5]" ||
      std::memcmp(res.tensor().data().data(), data.data(), 20) != 0) {
    std::cerr << "error: unexpected result " << res.type().ToShortString() << "\n";
    return 1;
  }
  std::cout << "c++: " << session->outputs()[0].name << " " << res.type().ToShortString() << " = "
            << idem::FormatValue(res) << "\n";
  return 0;
}
