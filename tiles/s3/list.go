package s3

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sealtrail/sealtrail/tiles"
)

var _ tiles.Lister = (*Store)(nil)

// List calls fn with every key under prefix (tiles.Lister), page by page
// (ListObjectsV2).
func (s *Store) List(ctx context.Context, prefix string, fn func(key string) error) error {
	p := awss3.NewListObjectsV2Paginator(s.c, &awss3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(s.prefix + prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("s3: list %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			key, ok := strings.CutPrefix(aws.ToString(o.Key), s.prefix)
			if !ok || tiles.CheckKey(key) != nil {
				continue
			}
			if err := fn(key); err != nil {
				return err
			}
		}
	}
	return nil
}
