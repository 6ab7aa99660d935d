BxJ
DQ3ÍFÐ%ÈRQ