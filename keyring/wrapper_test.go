package keyring_test

import (
	"testing"

	"github.com/sealtrail/sealtrail/keyring/wrappertest"
)

func TestFileKEKConformance(t *testing.T) {
	wrappertest.Wrap(t, wrappertest.FileKEK(t), wrappertest.FileKEK(t))
}
