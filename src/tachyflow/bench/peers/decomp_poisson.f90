! 2DECOMP&FFT peer of `tachyflow bench poisson`, served over named pipes.
!
! Built against 2DECOMP&FFT by src/tachyflow/bench/peers/build.sh (never part of the Python
! package's import path; a separate MPI job). Rank r reads commands from FOLDER/command.r and
! answers on FOLDER/reply.r, one line each, so that tachyflow's rank r can interleave this
! peer's samples with its own while the idle job waits in a blocking read, not in a polling
! MPI call:
!
!   setup NX NY NZ P_ROW P_COL LX LY LZ  -> "ready ROUNDTRIP_ERROR POISSON_ERROR P_ROW P_COL"
!   roundtrip N                          -> seconds per call (slowest rank) of N round trips
!   poisson N                            -> seconds per call (slowest rank) of N solves
!   quit                                 -> finalises and exits
!
! Round trip: r2c FFT of an x-pencil field (physical in x, spectral in z-pencils), the 1/N
! normalisation of the spectrum, c2r back. Poisson solve: the same transforms with the
! spectrum divided by the eigenvalues of the second-order finite-difference Laplacian,
! periodic in all three directions (2DECOMP&FFT has no Neumann transform); verified on the
! eigenfunction cos(2 pi x/Lx) cos(2 pi y/Ly) cos(2 pi z/Lz) at cell centres.
program decomp_poisson
   use mpi
   use decomp_2d
   use decomp_2d_constants
   use decomp_2d_fft
   use decomp_2d_mpi
   implicit none

   real(mytype), parameter :: pi = acos(-1._mytype)
   character(len=4096) :: folder
   character(len=256) :: line, word
   integer :: command_unit, reply_unit, ierror, rank, calls, n
   integer :: nx, ny, nz, p_row, p_col
   real(mytype) :: lengths(3), roundtrip_error, poisson_error
   real(mytype), allocatable :: field(:, :, :), back(:, :, :), exact(:, :, :), inverse(:, :, :)
   complex(mytype), allocatable :: spectrum(:, :, :)
   type(decomp_info), pointer :: ph, sp
   double precision :: start, elapsed, slowest
   logical :: ready

   call MPI_Init(ierror)
   call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierror)
   if (command_argument_count() /= 1) then
      if (rank == 0) write (*, '(a)') 'usage: decomp_poisson FOLDER (with command.R, reply.R pipes)'
      call MPI_Abort(MPI_COMM_WORLD, 2, ierror)
   end if
   call get_command_argument(1, folder)
   write (word, '(i0)') rank
   open (newunit=command_unit, file=trim(folder)//'/command.'//trim(word), action='read', &
         status='old', form='formatted')
   open (newunit=reply_unit, file=trim(folder)//'/reply.'//trim(word), action='write', &
         status='old', form='formatted')
   ready = .false.
   do
      read (command_unit, '(a)', iostat=ierror) line
      if (ierror /= 0) exit  ! tachyflow closed its end: leave as on quit
      read (line, *) word
      select case (trim(word))
      case ('setup')
         read (line, *) word, nx, ny, nz, p_row, p_col, lengths
         call setup()
         write (reply_unit, '(a, 2es12.4, 2(1x, i0))') 'ready', roundtrip_error, &
            poisson_error, p_row, p_col
      case ('roundtrip', 'poisson')
         if (.not. ready) call refuse('no setup before '//trim(word))
         read (line, *) word, calls
         call MPI_Barrier(MPI_COMM_WORLD, ierror)
         start = MPI_Wtime()
         do n = 1, calls
            if (word == 'roundtrip') then
               call roundtrip()
            else
               call solve()
            end if
         end do
         elapsed = (MPI_Wtime() - start)/calls
         call MPI_Allreduce(elapsed, slowest, 1, MPI_DOUBLE_PRECISION, MPI_MAX, &
                            MPI_COMM_WORLD, ierror)
         write (reply_unit, '(es22.15)') slowest
      case ('quit')
         exit
      case default
         call refuse('unknown command '//trim(word))
      end select
      flush (reply_unit)
   end do
   if (ready) then
      call decomp_2d_fft_finalize()
      call decomp_2d_finalize()
   end if
   call MPI_Finalize(ierror)

contains

   subroutine refuse(why)
      character(len=*), intent(in) :: why
      write (*, '(a, i0, 2a)') 'decomp_poisson rank ', rank, ': ', why
      call MPI_Abort(MPI_COMM_WORLD, 1, ierror)
   end subroutine refuse

   subroutine setup()
      integer :: i, j, k
      real(mytype) :: x, y, z, h(3), eigenvalue, local(2), worst(2)
      real(mytype), allocatable :: ex(:), ey(:), ez(:)

      if (ready) call refuse('setup twice')
      decomp_log = D2D_LOG_QUIET
      call decomp_2d_init(nx, ny, nz, p_row, p_col)
      call decomp_2d_fft_init(PHYSICAL_IN_X)
      ph => decomp_2d_fft_get_ph()
      sp => decomp_2d_fft_get_sp()
      call alloc_x(field, ph, .true.)
      call alloc_x(back, ph, .true.)
      call alloc_x(exact, ph, .true.)
      call alloc_z(spectrum, sp, .true.)
      call alloc_z(inverse, sp, .true.)
      h = lengths/[nx, ny, nz]
      ex = eigenvalues(nx, h(1))
      ey = eigenvalues(ny, h(2))
      ez = eigenvalues(nz, h(3))
      ! 1 / (eigenvalue * N): the unnormalised c2r of 2DECOMP&FFT is folded in.
      do k = sp%zst(3), sp%zen(3)
         do j = sp%zst(2), sp%zen(2)
            do i = sp%zst(1), sp%zen(1)
               eigenvalue = ex(i) + ey(j) + ez(k)
               if (i == 1 .and. j == 1 .and. k == 1) then
                  inverse(i, j, k) = 0
               else
                  inverse(i, j, k) = 1/(eigenvalue*nx*ny*nz)
               end if
            end do
         end do
      end do
      ! Round trip on a field with every mode present; Poisson on the eigenfunction.
      do k = ph%xst(3), ph%xen(3)
         z = (k - 0.5_mytype)*h(3)
         do j = ph%xst(2), ph%xen(2)
            y = (j - 0.5_mytype)*h(2)
            do i = ph%xst(1), ph%xen(1)
               x = (i - 0.5_mytype)*h(1)
               field(i, j, k) = sin(1.7_mytype*i + 2.3_mytype*j*j + 0.9_mytype*k)
               exact(i, j, k) = cos(2*pi*x/lengths(1))*cos(2*pi*y/lengths(2)) &
                                *cos(2*pi*z/lengths(3))
            end do
         end do
      end do
      call roundtrip()
      local(1) = maxval(abs(back - field))
      field = (ex(2) + ey(2) + ez(2))*exact
      call solve()
      local(2) = maxval(abs(back - exact))
      call MPI_Allreduce(local, worst, 2, real_type, MPI_MAX, MPI_COMM_WORLD, ierror)
      roundtrip_error = worst(1)
      poisson_error = worst(2)
      ready = .true.
   end subroutine setup

   function eigenvalues(cells, spacing) result(values)
      ! Eigenvalues of the periodic second difference, -(2 - 2 cos(2 pi m / cells)) / h^2.
      integer, intent(in) :: cells
      real(mytype), intent(in) :: spacing
      real(mytype), allocatable :: values(:)
      integer :: m
      values = [(-(2 - 2*cos(2*pi*m/cells))/spacing**2, m=0, cells - 1)]
   end function eigenvalues

   subroutine roundtrip()
      call decomp_2d_fft_3d(field, spectrum)
      spectrum = spectrum*(1._mytype/(real(nx, mytype)*ny*nz))
      call decomp_2d_fft_3d(spectrum, back)
   end subroutine roundtrip

   subroutine solve()
      call decomp_2d_fft_3d(field, spectrum)
      spectrum = spectrum*inverse
      call decomp_2d_fft_3d(spectrum, back)
   end subroutine solve

end program decomp_poisson
