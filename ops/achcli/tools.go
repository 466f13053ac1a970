//go:build tools

// Package tools pins moov-io/ach's achcli, the independent NACHA checker the tests and benches run.
package tools

import _ "github.com/moov-io/ach/cmd/achcli"
