module example.com/plant

go 1.21
