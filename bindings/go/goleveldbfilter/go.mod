module leveldbbloom/goleveldbfilter

go 1.19

require (
	github.com/syndtr/goleveldb v1.0.1-0.20200815110645-5c35d60c3ef8
	leveldbbloom v0.0.0
)

replace leveldbbloom => ../
