module payments-ledger/ops/achcli

go 1.24

require github.com/moov-io/ach v1.40.0

require (
	github.com/igrmk/treemap/v2 v2.0.1 // indirect
	github.com/juju/ansiterm v1.0.0 // indirect
	github.com/lunixbochs/vtclean v1.0.0 // indirect
	github.com/mattn/go-colorable v0.1.13 // indirect
	github.com/mattn/go-isatty v0.0.19 // indirect
	github.com/moov-io/base v0.49.4 // indirect
	github.com/moov-io/iso4217 v0.3.0 // indirect
	github.com/rickar/cal/v2 v2.1.15 // indirect
	golang.org/x/exp v0.0.0-20240604190554-fc45aab8b7f8 // indirect
	golang.org/x/net v0.26.0 // indirect
	golang.org/x/sync v0.7.0 // indirect
	golang.org/x/sys v0.21.0 // indirect
	golang.org/x/text v0.16.0 // indirect
)
