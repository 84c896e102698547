module github.com/opensearchrouted/opensearchrouted

go 1.26.0

require (
	github.com/opensearch-project/opensearch-go/v4 v4.8.1
	github.com/twmb/murmur3 v1.2.2
)

require go.yaml.in/yaml/v3 v3.0.6 // indirect
