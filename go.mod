module github.com/windowlimit/windowlimit

go 1.22
