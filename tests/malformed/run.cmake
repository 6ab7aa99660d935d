# placeholder, filled with the malformed corpus
