
Bif42JύκGSA