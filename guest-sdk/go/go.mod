// The part of go.bytecodealliance.org/pkg that wit-bindgen's Go bindings call (wit/types,
// wit/runtime), written for Rebound: that module comes only from the Go module proxy. The
// project's build wires it in with a `replace` directive.
module go.bytecodealliance.org/pkg

go 1.24
