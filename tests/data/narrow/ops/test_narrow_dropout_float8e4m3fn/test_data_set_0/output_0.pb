ByJ
DQ3ÍFÐ%ÈRQ