module github.com/streamlearner/streamlearner

go 1.26.0

require (
	github.com/alecthomas/kong v1.17.0
	golang.org/x/term v0.47.0
	gonum.org/v1/gonum v0.17.0
)

require golang.org/x/sys v0.49.0 // indirect
