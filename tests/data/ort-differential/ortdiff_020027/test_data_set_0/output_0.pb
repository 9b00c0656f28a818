
Blo17J…À