
Bout8JH£¾