module github.com/streamlearner/streamlearner

go 1.26
