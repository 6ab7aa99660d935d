BXj
locationx.binp