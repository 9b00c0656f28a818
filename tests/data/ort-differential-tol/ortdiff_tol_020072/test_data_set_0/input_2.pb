
Bin3J?<W°ˆI