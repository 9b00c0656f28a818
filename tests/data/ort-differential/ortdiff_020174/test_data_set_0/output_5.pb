
Bout31JìF