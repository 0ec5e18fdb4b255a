module github.com/streamlearner/streamlearner

go 1.26.0

require (
	github.com/alecthomas/kong v1.17.0
	golang.org/x/term v0.47.0
)

require golang.org/x/sys v0.49.0 // indirect
