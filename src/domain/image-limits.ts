/**
 * The most pixels the service decodes in one image: 50 megapixels, room for the largest phone photos (8064x6048).
 * The API refuses a bigger image from its header, before any decoding, and every decode of an input is capped at
 * it too, so a small file that unpacks to gigabytes of pixels is refused instead of stalling a process.
 */
export const MAX_IMAGE_PIXELS = 50_000_000;

/**
 * The most pixels of a HEIC image: 25 megapixels, room for the 12- and 24-megapixel photos phones take by default
 * (5712x4284). HEIC is decoded in WebAssembly at about 12 MB of memory and 60 ms of CPU per megapixel, twice what
 * the 50-megapixel cap would allow; a larger photo (a 48-megapixel "HEIF Max" one) can be sent as JPEG.
 */
export const MAX_HEIC_PIXELS = 25_000_000;
