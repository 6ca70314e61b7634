module github.com/emersion/go-msgauth

go 1.18

require (
	github.com/emersion/go-milter v0.4.1
	golang.org/x/crypto v0.31.0
)

require github.com/emersion/go-message v0.18.1 // indirect
