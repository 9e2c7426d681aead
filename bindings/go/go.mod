module leveldbbloom

go 1.19
