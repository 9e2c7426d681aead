module leveldbprogram

go 1.19
