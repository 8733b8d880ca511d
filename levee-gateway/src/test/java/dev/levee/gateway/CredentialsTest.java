package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class CredentialsTest {

    @ParameterizedTest(name = "[{index}] {0} | {1} -> {2}")
    @CsvSource(delimiter = '|', nullValues = "NULL", textBlock = """
            # SigV4 header (the AWS SDKs)
            AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc | NULL | AKIDEXAMPLE
            AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/s3/aws4_request,SignedHeaders=host,Signature=abc | NULL | AKIDEXAMPLE
            '  AWS4-HMAC-SHA256 SignedHeaders=host, Credential=K2/20260101/x/s3/aws4_request, Signature=1'         | NULL | K2
            # SigV4a
            AWS4-ECDSA-P256-SHA256 Credential=AKIDV4A/20260101/s3/aws4_request, SignedHeaders=host, Signature=1 | NULL | AKIDV4A
            # SigV2 header
            AWS AKIDV2:c2lnbmF0dXJl                                                         | NULL | AKIDV2
            # the header wins over the query
            AWS4-HMAC-SHA256 Credential=FROMHEADER/20260101/r/s3/aws4_request, Signature=1  | X-Amz-Credential=FROMQUERY%2F20260101 | FROMHEADER
            # presigned SigV4 URL
            NULL | X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDPRE%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z | AKIDPRE
            NULL | x-id=GetObject&X-Amz-Credential=AKIDRAW/20260101/us-east-1/s3/aws4_request                   | AKIDRAW
            # presigned SigV2 URL
            NULL | AWSAccessKeyId=AKIDV2Q&Expires=1&Signature=x                                 | AKIDV2Q
            # nothing claimed, or malformed
            NULL                                                         | NULL                         | NULL
            ''                                                           | ''                           | NULL
            Bearer abc                                                   | NULL                         | NULL
            AWS4-HMAC-SHA256 SignedHeaders=host, Signature=abc           | NULL                         | NULL
            AWS4-HMAC-SHA256 Credential=/20260101/r/s3/aws4_request      | NULL                         | NULL
            AWS nocolon                                                  | NULL                         | NULL
            NULL                                                         | X-Amz-Credential=            | NULL
            NULL                                                         | NotX-Amz-Credential=K%2F1    | NULL
            NULL                                                         | X-Amz-Credential=a%00b%2F1   | NULL
            NULL                                                         | uploads                      | NULL
            """)
    void readsTheClaimedAccessKeyId(String authorization, String query, String expected) {
        assertThat(Credentials.accessKeyId(authorization, query)).isEqualTo(expected);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            AKIAIOSFODNN7EXAMPLE | true
            minio-user_01.x      | true
            a                    | true
            with space           | false
            a/b                  | false
            a,b                  | false
            a:b                  | false
            a%2F                 | false
            """)
    void keyIdsOfTheDirectoryAreReadBackUnchanged(String id, boolean ok) {
        assertThat(Credentials.isKeyId(id)).isEqualTo(ok);
        if (ok) {
            assertThat(Credentials.accessKeyId("AWS4-HMAC-SHA256 Credential=" + id + "/d/r/s3/aws4_request", null)).isEqualTo(id);
            assertThat(Credentials.accessKeyId(null, "X-Amz-Credential=" + id + "%2Fd")).isEqualTo(id);
        }
    }

    @org.junit.jupiter.api.Test
    void overlongClaimsAreIgnored() {
        String id = "K".repeat(Credentials.MAX_KEY_LENGTH + 1);
        assertThat(Credentials.accessKeyId("AWS " + id + ":sig", null)).isNull();
        assertThat(Credentials.accessKeyId("AWS " + id.substring(1) + ":sig", null)).hasSize(Credentials.MAX_KEY_LENGTH);
    }
}
