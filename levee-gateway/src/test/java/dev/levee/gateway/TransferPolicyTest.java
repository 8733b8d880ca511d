package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.governor.AdmissionClass;
import dev.levee.s3.S3Operation;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class TransferPolicyTest {

    @ParameterizedTest
    @CsvSource(nullValues = "NULL", textBlock = """
            PutObject,               true,  true,  MUTATING_UPLOAD
            UploadPart,              true,  true,  MUTATING_UPLOAD
            PostObject,              true,  true,  MUTATING_UPLOAD
            GetObject,               true,  true,  DOWNLOAD
            CopyObject,              false, false, NULL
            UploadPartCopy,          false, false, NULL
            CompleteMultipartUpload, false, false, NULL
            CreateMultipartUpload,   true,  true,  NULL
            ListObjectsV2,           true,  true,  NULL
            DeleteObjects,           true,  true,  NULL
            HeadObject,              true,  true,  NULL
            Unknown,                 true,  true,  NULL
            """)
    void chargesBodiesThatCrossTheClientsNetwork(S3Operation op, boolean upload, boolean download, AdmissionClass admission) {
        assertThat(TransferPolicy.chargesUpload(op)).isEqualTo(upload);
        assertThat(TransferPolicy.chargesDownload(op)).isEqualTo(download);
        assertThat(TransferPolicy.admissionClass(op)).isEqualTo(admission);
    }
}
