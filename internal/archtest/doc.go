// Package archtest holds canaryd's architecture to account: its tests
// check the rules of which package may import which, that no function
// grows past a screenful, and that the package map of docs/developing.md
// says what each package's doc comment says, which PackageMap writes.
//
// Each rule that does not hold yet has its violations listed, by name, in
// the test: a listed violation that no longer exists fails the test as an
// unlisted one does, so that the lists only shrink and stay exact.
package archtest
